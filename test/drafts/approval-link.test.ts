/**
 * The one-time approval link, driven like a browser without JavaScript: a plain HTTP client
 * loads the page, keeps its cookie and posts the form. The link is mailed through a real SMTP
 * relay on loopback, works once, expires, and refuses forms from elsewhere.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { hiddenField } from '../helpers/identity'
import { managedAddress } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { relayOf } from '../../src/sending/relay'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { parseMail } from '../../src/mail/inbound/parse'

let relay: TestRelay
let worker: Worker
let t: TestApp
let org: TestOrg
let address: string

const unique = () => crypto.randomUUID().slice(0, 8)
/** The messages of drafts sent with `subject` (not the mails of approval links, which quote it). */
const relayed = (subject: string) => relay.messages.filter(m => !m.from.startsWith('no-reply@') && m.raw.includes(subject))

beforeAll(async () => {
  relay = await startTestRelay()
  t = await testApp({ SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000' })
  worker = await startWorker(t.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  org = await createOrg()
  address = await managedAddress(t.ctx, org.orgId)
  expectOk(await t.request('PUT', `/v1/approval-policies/${address}`, { key: org.key, body: { approval_required: true } }))
})
afterAll(async () => {
  await worker.stop(1000)
  await relayOf(t.ctx).close()
  await relay.stop()
})

/** A draft pending approval, with its subject. */
async function pending(over: Record<string, unknown> = {}) {
  const subject = `Link ${unique()} <b>&</b>`
  const res = await t.request('POST', '/v1/send-mail', {
    key: org.key,
    body: { from: address, to: 'bob@example.com', subject, body_text: 'Body <script>x</script>', ...over },
  })
  expect(res.status).toBe(202)
  return { id: res.body.data.draft_id as string, subject }
}

const linkFor = async (id: string, body?: unknown) => expectOk(await t.request('POST', `/v1/drafts/${id}/approval-link`, { key: org.key, body }), 201)
const pathOf = (url: string) => url.replace(t.ctx.config.PUBLIC_URL, '')

/** GET the page like a browser: its HTML, hidden fields and cookie. */
async function open(url: string) {
  const res = await t.request('GET', pathOf(url))
  const html = res.body as string
  return {
    res,
    html,
    token: res.status === 200 ? hiddenField(html, 'token') : '',
    csrf: res.status === 200 ? hiddenField(html, 'csrf_token') : '',
    cookie: (res.headers.get('set-cookie') ?? '').split(';')[0]!,
  }
}

function post(page: { token: string; csrf: string; cookie: string }, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return t.request('POST', '/drafts/approval', {
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookie, ...headers },
    body: new URLSearchParams({ token: page.token, csrf_token: page.csrf, ...fields }).toString(),
  })
}

describe('the approval page', () => {
  test('shows the draft, escaped, with two buttons and no script; posting Approve sends it, once', async () => {
    const { id, subject } = await pending()
    const link = await linkFor(id)
    expect(link.url).toStartWith(`${t.ctx.config.PUBLIC_URL}/drafts/approval?token=dal_`)
    const page = await open(link.url)
    expect(page.res.status).toBe(200)
    expect(page.res.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(page.res.headers.get('referrer-policy')).toBe('no-referrer')
    expect(page.res.headers.get('cache-control')).toBe('no-store')
    expect(page.cookie).toMatch(/^draft_browser=/)
    expect(page.res.headers.get('set-cookie')).toContain('HttpOnly')
    expect(page.html).toContain('bob@example.com')
    expect(page.html).toContain(subject.replace('<b>&amp;</b>', '').split(' <')[0]!)
    expect(page.html).not.toContain('<script>')
    expect(page.html).toContain('&#60;script&#62;')
    expect(page.html).toContain('value="approve"')
    expect(page.html).toContain('value="reject"')

    const done = await post(page, { action: 'approve' })
    expect(done.status).toBe(200)
    expect(done.body).toContain('Message approved')
    expect(relayed(subject)).toHaveLength(1)
    expect(expectOk(await t.request('GET', `/v1/drafts/${id}`, { key: org.key }))).toMatchObject({
      status: 'sent',
      decided_by: { via: 'link', user_id: org.userId },
    })

    // used: the form and the page are refused, and nothing more is sent
    expect((await post(page, { action: 'approve' })).status).toBe(410)
    expect((await open(link.url)).res.status).toBe(410)
    expect(relayed(subject)).toHaveLength(1)
  })

  test('Reject keeps the reason typed in the form', async () => {
    const { id, subject } = await pending()
    const page = await open((await linkFor(id)).url)
    const done = await post(page, { action: 'reject', reason: 'Not to Bob' })
    expect(done.status).toBe(200)
    expect(done.body).toContain('Message rejected')
    expect(expectOk(await t.request('GET', `/v1/drafts/${id}`, { key: org.key }))).toMatchObject({ status: 'rejected', rejection_reason: 'Not to Bob' })
    expect(relayed(subject)).toHaveLength(0)
  })

  test('an expired link is refused, on the page and in the form', async () => {
    const { id, subject } = await pending()
    const link = await linkFor(id, { expires_in: 60 })
    const page = await open(link.url)
    expect(page.res.status).toBe(200)
    const sql = await testSql()
    await sql`update draft_approval_links set expires_at = now() - interval '1 second' where draft_id = ${id}`
    expect((await open(link.url)).res.status).toBe(410)
    expect((await post(page, { action: 'approve' })).status).toBe(410)
    expect(expectOk(await t.request('GET', `/v1/drafts/${id}`, { key: org.key })).status).toBe('pending_approval')
    expect(relayed(subject)).toHaveLength(0)
  })

  test('a form without the cookie, with a forged token, or from another site is refused and leaves the link usable', async () => {
    const { id, subject } = await pending()
    const link = await linkFor(id)
    const page = await open(link.url)
    expect((await post({ ...page, cookie: '' }, { action: 'approve' })).status).toBe(403)
    expect((await post({ ...page, csrf: 'forged' }, { action: 'approve' })).status).toBe(403)
    const other = await open(link.url)
    expect((await post({ ...page, cookie: other.cookie }, { action: 'approve' })).status).toBe(403)
    expect((await post(page, { action: 'approve' }, { origin: 'https://evil.example' })).status).toBe(403)
    expect((await post({ ...page, token: 'dal_unknown' }, { action: 'approve' })).status).toBe(410)
    expect((await post(page, { action: 'publish' })).status).toBe(400)
    expect(relayed(subject)).toHaveLength(0)
    expect((await post(page, { action: 'approve' }, { origin: t.ctx.config.PUBLIC_URL })).status).toBe(200)
    expect(relayed(subject)).toHaveLength(1)
  })

  test('a link works only while its maker is an owner or admin', async () => {
    const { id, subject } = await pending()
    const page = await open((await linkFor(id)).url)
    const sql = await testSql()
    await sql`update memberships set role = 'member' where org_id = ${org.orgId} and user_id = ${org.userId}`
    try {
      expect((await post(page, { action: 'approve' })).status).toBe(403)
    } finally {
      await sql`update memberships set role = 'owner' where org_id = ${org.orgId} and user_id = ${org.userId}`
    }
    expect(relayed(subject)).toHaveLength(0)
  })
})

describe('mailing the link', () => {
  test('send_to mails it to a person through the relay; the mailed link opens the page', async () => {
    const { id } = await pending()
    const person = `approver-${unique()}@example.com`
    const link = await linkFor(id, { send_to: person })
    expect(link.sent_to).toBe(person)
    const [mail] = relay.messages.filter(m => m.to.includes(person))
    const text = (await parseMail(new Uint8Array(Buffer.from(mail!.raw)))).text ?? ''
    expect(text).toContain(link.url)
    expect((await open(link.url)).res.status).toBe(200)
    expectError(await t.request('POST', `/v1/drafts/${id}/approval-link`, { key: org.key, body: { send_to: 'nobody' } }), 400, 'validation_error', /^send_to: /)
    expectError(await t.request('POST', `/v1/drafts/${id}/approval-link`, { key: org.key, body: { expires_in: 10 } }), 400, 'validation_error', /^expires_in: /)
  })

  test("a policy's notify_email is mailed a link for each draft that starts waiting", async () => {
    const o = await createOrg()
    const sender = await managedAddress(t.ctx, o.orgId)
    const person = `boss-${unique()}@example.com`
    expectOk(await t.request('PUT', `/v1/approval-policies/${sender}`, { key: o.key, body: { approval_required: true, notify_email: person } }))
    const subject = `Notify ${unique()}`
    const held = await t.request('POST', '/v1/send-mail', { key: o.key, body: { from: sender, to: 'bob@example.com', subject, body_text: 'x' } })
    expect(held.status).toBe(202)
    const deadline = Date.now() + 10_000
    while (!relay.messages.some(m => m.to.includes(person)) && Date.now() < deadline) await Bun.sleep(50)
    const mail = relay.messages.find(m => m.to.includes(person))!
    const text = (await parseMail(new Uint8Array(Buffer.from(mail.raw)))).text ?? ''
    const url = /https?:\/\/\S+\/drafts\/approval\?token=dal_[A-Za-z0-9_-]+/.exec(text)![0]
    const page = await open(url)
    expect(page.html).toContain(subject)
    expect((await post(page, { action: 'approve' })).status).toBe(200)
    expect(relayed(subject)).toHaveLength(1)
  })

  test('only for a draft pending approval', async () => {
    const d = expectOk(
      await t.request('POST', '/v1/drafts', { key: org.key, body: { from: address, to: 'bob@example.com', subject: 's', body_text: 'b' } }),
      201,
    )
    expectError(await t.request('POST', `/v1/drafts/${d.id}/approval-link`, { key: org.key }), 409, 'conflict', /^draft: is draft/)
  })
})
