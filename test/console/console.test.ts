/**
 * The console over HTTP, without a browser: sign-in and its failures, the session cookie, CSRF on
 * every form, another organization's resources (404), the role rules of the operations it calls,
 * the policies of its pages and of a message's HTML, and its assets served by the service.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApiKey } from '../../src/auth/api-keys'
import { hiddenField, person, type Person } from '../oauth/helpers'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { addMember } from '../../src/account/membership-queries'
import { setPlan } from '../../src/account/org-queries'
import { escapeHtml } from '../../src/oauth/pages'

let t: InboundHarness
let owner: Person
let ownerKey: string
let other: TestOrg
let otherThreadId: string
let ownEmailId: string
let ownThreadId: string
let ipCounter = 0
const ip = () => `192.0.2.${++ipCounter}`

interface Browser {
  cookie: string
  csrf: string
}

/** What a browser does: load the sign-in form, post it with the form's cookie, keep the session cookie. */
async function signIn(
  app: TestApp,
  who: { email: string; password: string },
  from = ip(),
): Promise<{ status: number; html: string; setCookie: string; browser?: Browser }> {
  const form = await app.app.handle(new Request('http://api.test.local/console/sign-in', { headers: { 'x-forwarded-for': from } }))
  const formCookie = form.headers.get('set-cookie')!.split(';')[0]!
  const csrf = hiddenField(await form.text(), 'csrf_token')
  const res = await app.app.handle(
    new Request('http://api.test.local/console/sign-in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: formCookie, 'x-forwarded-for': from },
      body: new URLSearchParams({ csrf_token: csrf, email: who.email, password: who.password }).toString(),
    }),
  )
  const setCookie = res.headers.get('set-cookie') ?? ''
  const html = await res.text()
  if (res.status !== 303) return { status: res.status, html, setCookie }
  const cookie = setCookie.split(';')[0]!
  const page = await get(app, { cookie, csrf: '' }, '/console/keys')
  return { status: 303, html, setCookie, browser: { cookie, csrf: hiddenField(await page.text(), 'csrf_token') } }
}

const get = (app: TestApp, b: Browser, path: string) => app.app.handle(new Request(`http://api.test.local${path}`, { headers: { cookie: b.cookie } }))

function post(app: TestApp, b: Browser, path: string, fields: Record<string, string>) {
  return app.app.handle(
    new Request(`http://api.test.local${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: b.cookie },
      body: new URLSearchParams(fields).toString(),
    }),
  )
}

let browser: Browser

beforeAll(async () => {
  t = await inboundHarness()
  owner = await person('owner')
  const sql = await testSql()
  ownerKey = (await sql.begin(tx => createApiKey(tx, owner.orgId, owner.userId, 'setup'))).key
  other = await createOrg()
  const [mine, theirs] = [await managedAddress(t.ctx, owner.orgId), await managedAddress(t.ctx, other.orgId)]
  await t.transport.sendMail({ from: 'a@sender.example', to: theirs, subject: 'Not yours', text: 'secret', html: '<p>secret</p>' })
  await t.transport.sendMail({
    from: 'a@sender.example',
    to: mine,
    subject: 'Yours',
    text: 'hello',
    html: '<p>hello <img src="https://tracker.example/p.gif"></p>',
  })
  otherThreadId = (await t.latest({ key: other.key })).thread_id
  const own = await t.latest({ key: ownerKey })
  ownEmailId = own.id
  ownThreadId = own.thread_id
  browser = (await signIn(t, owner)).browser!
})

afterAll(() => t.stop())

describe('signing in', () => {
  test('without a session every page leads to the sign-in form', async () => {
    for (const path of ['/console', '/console/keys', `/console/threads/${ownThreadId}`]) {
      const res = await t.app.handle(new Request(`http://api.test.local${path}`))
      expect(res.status).toBe(303)
      expect(res.headers.get('location')).toBe('/console/sign-in')
    }
  })

  test('the session cookie is HttpOnly, SameSite=Lax, scoped to /console, and Secure over https', async () => {
    const plain = await signIn(t, owner)
    expect(plain.setCookie).toMatch(/^console_session=cs_[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Lax; Max-Age=43200$/)
    const https = await testApp({ PUBLIC_URL: 'https://console.test' })
    expect((await signIn(https, owner)).setCookie).toEndWith('; Secure')
  })

  test('a wrong password is refused with the form again, and tells nothing of the address', async () => {
    const wrong = await signIn(t, { email: owner.email, password: 'not it' })
    const unknown = await signIn(t, { email: 'nobody@example.test', password: 'not it' })
    expect([wrong.status, unknown.status]).toEqual([401, 401])
    expect(wrong.html).toContain('email, password: no account matches this email address and password.')
    expect(unknown.html).toContain('email, password: no account matches this email address and password.')
    expect(wrong.setCookie).not.toContain('console_session')
  })

  test('a sign-in form posted without the cookie of the browser that loaded it is refused (login CSRF)', async () => {
    const form = await t.app.handle(new Request('http://api.test.local/console/sign-in'))
    const csrf = hiddenField(await form.text(), 'csrf_token')
    const res = await t.app.handle(
      new Request('http://api.test.local/console/sign-in', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip() },
        body: new URLSearchParams({ csrf_token: csrf, email: owner.email, password: owner.password }).toString(),
      }),
    )
    expect(res.status).toBe(403)
    expect(await res.text()).toContain('csrf_token: this form was not loaded in this browser')
  })

  test('signing out ends the session on the server', async () => {
    const b = (await signIn(t, owner)).browser!
    expect((await post(t, b, '/console/sign-out', { csrf_token: b.csrf })).status).toBe(303)
    const after = await get(t, b, '/console/keys')
    expect(after.status).toBe(303)
  })
})

describe('forms and pages', () => {
  test('every form needs the session’s CSRF token', async () => {
    const other = (await signIn(t, owner)).browser!
    for (const token of [undefined, 'forged', other.csrf]) {
      const res = await post(t, browser, '/console/keys', token === undefined ? { name: 'x' } : { name: 'x', csrf_token: token })
      expect(res.status).toBe(403)
      expect(await res.text()).toContain('csrf_token: missing or not this session')
    }
  })

  test('a bad input is the error code with a field: reason message and its status', async () => {
    const res = await post(t, browser, '/console/keys', { csrf_token: browser.csrf, name: 'x'.repeat(101) })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('validation_error</strong>: name: must be 1 to 100 characters')
  })

  test('another organization’s thread, key or delivery is not found, and so is a malformed id', async () => {
    expect((await get(t, browser, `/console/threads/${otherThreadId}`)).status).toBe(404)
    expect((await post(t, browser, `/console/keys/${other.keyId}/revoke`, { csrf_token: browser.csrf })).status).toBe(404)
    expect((await get(t, browser, `/console/deliveries/${crypto.randomUUID()}`)).status).toBe(404)
    expect((await get(t, browser, '/console/threads/not-a-uuid')).status).toBe(404)
    const whoami = await t.request('GET', '/v1/whoami', { key: other.key })
    expect(whoami.status).toBe(200)
  })

  test('a member may not approve drafts: the operation’s role rule holds in the console', async () => {
    const sql = await testSql()
    const member = await person('member')
    await sql.begin(tx => addMember(tx, owner.orgId, member.userId, 'member'))
    const m = (await signIn(t, member)).browser!
    const switched = await post(t, m, '/console/org', { csrf_token: m.csrf, org_id: owner.orgId })
    expect(switched.status).toBe(303)
    const res = await post(t, m, `/console/drafts/${crypto.randomUUID()}/approve`, { csrf_token: m.csrf })
    expect(res.status).toBe(403)
    expect(await res.text()).toContain('forbidden</strong>: drafts: approving or rejecting: needs the owner or admin role')
    // the member's own organization is scoped away: the page shows the organization the session is on
    expect(await (await get(t, m, '/console/inboxes')).text()).toContain('(member)')
    // an organization the person does not belong to cannot be chosen
    expect((await post(t, m, '/console/org', { csrf_token: m.csrf, org_id: other.orgId })).status).toBe(404)
  })

  test('rejecting a draft keeps the reason typed in the form; a blank one is no reason', async () => {
    const sender = await managedAddress(t.ctx, owner.orgId)
    expect((await t.request('PUT', `/v1/approval-policies/${sender}`, { key: ownerKey, body: { approval_required: true } })).status).toBe(200)
    const held = async (subject: string) => {
      const res = await t.request('POST', '/v1/send-mail', { key: ownerKey, body: { from: sender, to: 'bob@example.com', subject, body_text: 'x' } })
      expect(res.status).toBe(202)
      return res.body.data.draft_id as string
    }
    const [reasoned, blank] = [await held('reasoned'), await held('blank')]
    const page = await (await get(t, browser, '/console/drafts')).text()
    expect(page).toContain('<input type="text" name="reason" maxlength="1000">')
    expect((await post(t, browser, `/console/drafts/${reasoned}/reject`, { csrf_token: browser.csrf, reason: '  not this week  ' })).status).toBe(200)
    expect((await post(t, browser, `/console/drafts/${blank}/reject`, { csrf_token: browser.csrf, reason: ' ' })).status).toBe(200)
    const draft = async (id: string) => (await t.request('GET', `/v1/drafts/${id}`, { key: ownerKey })).body.data
    expect(await draft(reasoned)).toMatchObject({ status: 'rejected', rejection_reason: 'not this week' })
    expect(await draft(blank)).toMatchObject({ status: 'rejected', rejection_reason: null })
  })

  test('every page renders for the organization: lists, a domain with its DNS records, a function', async () => {
    const domain = await t.request('POST', '/v1/domains', { key: ownerKey, body: { domain: `console-${crypto.randomUUID().slice(0, 8)}.example` } })
    expect(domain.status).toBe(201)
    const fn = await t.request('POST', '/v1/functions', {
      key: ownerKey,
      body: { name: 'console-fn', code: 'export default { async fetch(request) { console.log("hi"); return new Response("ok") } }' },
    })
    expect(fn.status).toBe(201)
    const pages: [string, string][] = [
      ['/console/inboxes', 'Inboxes'],
      ['/console/threads', 'Yours'],
      ['/console/search?q=hello', 'Yours'],
      ['/console/drafts', 'Nothing waits for approval.'],
      ['/console/webhooks', 'No endpoints yet.'],
      ['/console/functions', 'console-fn'],
      [`/console/functions/${fn.body.data.id}`, 'No invocations yet.'],
      ['/console/domains', domain.body.data.domain],
      [`/console/domains/${domain.body.data.id}`, domain.body.data.dns_records[0].value],
      ['/console/keys', 'setup'],
    ]
    for (const [path, shows] of pages) {
      const res = await get(t, browser, path)
      const html = await res.text()
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      expect(html).toContain(escapeHtml(shows))
    }
    // the ledger is a feature of plans with x402: on this plan the page says so, with the API's error
    const payments = await get(t, browser, '/console/payments')
    expect(payments.status).toBe(403)
    expect(await payments.text()).toContain('feature_disabled</strong>')
    await (await testSql()).begin(tx => setPlan(tx, owner.orgId, 'power'))
    const ledger = await get(t, browser, '/console/payments')
    expect([ledger.status, await ledger.text()]).toEqual([200, expect.stringContaining('No payments yet.')])
    // a search finds only this organization's mail
    expect(await (await get(t, browser, '/console/search?q=secret')).text()).toContain('Nothing matches.')
  })

  test('pages allow only the service’s own scripts, styles and frames; the thread shows the message', async () => {
    const res = await get(t, browser, `/console/threads/${ownThreadId}`)
    expect(res.status).toBe(200)
    const policy = res.headers.get('content-security-policy')!
    expect(policy).toContain("script-src 'self'")
    expect(policy).toContain("frame-ancestors 'none'")
    expect(policy).not.toContain('unsafe-inline')
    const html = await res.text()
    expect(html).toContain(`<iframe class="message-html" name="message-${ownEmailId}"`)
    expect(html).toContain(' sandbox src=')
    expect(html).not.toContain('tracker.example')
  })

  test('a message’s HTML has a sandboxing policy that blocks remote content until asked', async () => {
    const blocked = await get(t, browser, `/console/emails/${ownEmailId}/html`)
    expect(blocked.headers.get('content-security-policy')).toBe(
      "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; form-action 'none'; frame-ancestors 'self'; base-uri 'none'; sandbox",
    )
    expect(await blocked.text()).toContain('tracker.example')
    const remote = await get(t, browser, `/console/emails/${ownEmailId}/html?remote=1`)
    expect(remote.headers.get('content-security-policy')).toContain('img-src data: https: http:')
  })

  test('htmx and Pico are served by the service from node_modules', async () => {
    const js = await t.app.handle(new Request('http://api.test.local/console/assets/htmx.min.js'))
    expect(js.status).toBe(200)
    expect(js.headers.get('content-type')).toStartWith('text/javascript')
    expect(await js.text()).toContain('htmx')
    const css = await t.app.handle(new Request('http://api.test.local/console/assets/pico.min.css'))
    expect(css.headers.get('content-type')).toStartWith('text/css')
    expect((await t.app.handle(new Request('http://api.test.local/console/assets/../../package.json'))).status).toBe(404)
  })
})
