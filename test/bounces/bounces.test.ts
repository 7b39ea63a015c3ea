/**
 * Bounces and complaints end to end: a message sent through the relay sink, a report about it
 * in a real MTA's shape delivered over SMTP to the sender's inbox, then the send's recipient
 * status, the webhook event at a receiver on 127.0.0.1, the suppression entry and the gate of the
 * next send. A relay's 5xx at RCPT TO is a hard bounce too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createOrg, testSql, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { until } from '../helpers/until'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { relayOf } from '../../src/sending/relay'
import { gqlData } from '../graphql/helpers'
import { deliver, report } from './reports'

let relay: TestRelay
let h: InboundHarness
let worker: Worker
let receiver: Receiver

beforeAll(async () => {
  relay = await startTestRelay()
  h = await inboundHarness({
    SMTP_RELAY_URL: relay.url,
    RELAY_TIMEOUT_MS: '10000',
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_RETRY_SCHEDULE: '1,1',
    WEBHOOK_TIMEOUT_MS: '10000',
  })
  worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  receiver = startReceiver()
})
afterAll(async () => {
  await worker.stop(1000)
  receiver.stop()
  await relayOf(h.ctx).close()
  await relay.stop()
  await h.stop()
})

interface Sender {
  org: TestOrg
  address: string
  /** the receiver's path of the organization's webhook endpoint */
  hook: string
}

/** An organization with an inbox to send from and an org-wide webhook endpoint on the receiver. */
async function sender(rules: Record<string, unknown> = {}): Promise<Sender> {
  const org = await createOrg()
  const address = await managedAddress(h.ctx, org.orgId)
  const sql = await testSql()
  const id = randomUUIDv7()
  await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${id}, ${org.orgId}, 'http', ${receiver.url(`/${id}`)}, true, ${sql.json(rules as never)})`
  return { org, address, hook: `/${id}` }
}

const rcpt = (tag: string) => `${tag}-${crypto.randomUUID().slice(0, 8)}@example.com`

/** Sends through the API; returns the response and the message as the relay sink got it. */
async function send(s: Sender, to: string | string[]) {
  const before = relay.messages.length
  const res = await h.request('POST', '/v1/send-mail', {
    key: s.org.key,
    body: { from: s.address, to, subject: `Hello ${crypto.randomUUID()}`, body_text: 'Hi there.' },
  })
  const first = Array.isArray(to) ? to[0] : to
  const relayed = res.status === 200 ? relay.messages.slice(before).find(m => m.to.includes(first!) && m.raw.includes(res.body.data.from)) : undefined
  return { res, relayed }
}

const sentEmail = async (s: Sender, id: string) => (await h.request('GET', `/v1/sent-emails/${id}`, { key: s.org.key })).body.data
const suppressions = async (s: Sender) => (await h.request('GET', '/v1/suppressions', { key: s.org.key })).body

/** The webhook events of `type` the receiver got for the organization's endpoint. */
const events = async (s: Sender, type: string) => receiver.requests.filter(r => r.path === s.hook && r.json?.event === type).map(r => r.json)

async function bounceBack(s: Sender, fixture: string, to: string) {
  const { res, relayed } = await send(s, to)
  expect(res.status).toBe(200)
  await deliver(h.smtpPort, s.address, await report(fixture, { sender: s.address, recipient: to, original: relayed!.raw }))
  return res.body.data.id as string
}

describe('a delivery status notification for a message we sent', () => {
  test('Postfix, 5.1.1: the recipient bounced hard, email.bounced carries the send, the address is suppressed and the next send is refused by the gate', async () => {
    const s = await sender()
    const to = rcpt('gone')
    const sendId = await bounceBack(s, 'postfix-hard.eml', to)

    const state = await sentEmail(s, sendId)
    expect(state.recipients).toEqual([
      {
        address: to,
        status: 'bounced',
        bounce_type: 'hard',
        status_code: '5.1.1',
        diagnostic_code: `smtp; 550 5.1.1 <${to}>: Recipient address rejected: User unknown in virtual mailbox table`,
        feedback_type: null,
        reported_at: expect.any(String),
      },
    ])
    expect(state.status).toBe('queued')

    const [event] = await until(
      () => events(s, 'email.bounced'),
      e => e.length === 1,
    )
    expect(event).toMatchObject({
      event: 'email.bounced',
      send_id: sendId,
      bounce: { send_id: sendId, email_id: state.email_id, source: 'dsn', recipients: [{ address: to, type: 'hard', status_code: '5.1.1' }] },
      email: { envelope: { mail_from: '', rcpt_to: [s.address] }, headers: { subject: 'Undelivered Mail Returned to Sender' } },
    })

    const list = await suppressions(s)
    expect(list.data).toEqual([
      {
        id: expect.any(String),
        address: to,
        reason: 'hard_bounce',
        detail: state.recipients[0].diagnostic_code,
        send_id: sendId,
        created_at: expect.any(String),
      },
    ])
    expect(list.meta).toMatchObject({ total: 1, cursor: null })

    const again = await send(s, [rcpt('fine'), to.toUpperCase()])
    expectError(again.res, 403, 'recipient_not_allowed')
    expect(again.res.body.error.gates).toEqual([
      {
        name: 'suppression_list',
        reason: 'recipient_hard_bounced',
        message: expect.stringContaining(to),
        subject: to,
        fix: { action: 'delete_suppression', subject: to },
        docs_url: expect.stringMatching(/\/docs#suppressions$/),
      },
    ])

    // GraphQL reads the same
    const g = await gqlData(
      h,
      `query($id: ID!) { sentEmail(id: $id) { recipients { address status bounceType statusCode } } suppressions(first: 5) { edges { node { address reason sendId } } } }`,
      { key: s.org.key, variables: { id: sendId } },
    )
    expect(g.sentEmail.recipients).toEqual([{ address: to, status: 'bounced', bounceType: 'hard', statusCode: '5.1.1' }])
    expect(g.suppressions.edges).toEqual([{ node: { address: to, reason: 'hard_bounce', sendId } }])

    // the feed tells the send's and the list's story
    const feed = (await h.request('GET', '/v1/changes?cursor=earliest&types=send.bounced,suppression.created', { key: s.org.key })).body
    expect(feed.data.map((c: any) => c.type)).toEqual(['send.bounced', 'suppression.created'])

    // deleted from the list, the address can be written to again
    const removed = await h.request('DELETE', `/v1/suppressions/${encodeURIComponent(to)}`, { key: s.org.key })
    expect(removed.status).toBe(200)
    expect(removed.body.data).toEqual({ address: to, deleted: true })
    expect((await send(s, to)).res.status).toBe(200)
  })

  for (const [fixture, status, diagnostic] of [
    ['exim-hard.eml', '5.0.0', 'smtp; 550 No such user here'],
    ['gmail-hard.eml', '5.1.1', /^smtp; The email account that you tried to reach does not exist\. Please try double-checking/],
    ['microsoft-hard.eml', '5.1.10', 'smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup'],
  ] as const) {
    test(`${fixture}: a hard bounce, suppressed`, async () => {
      const s = await sender()
      const to = rcpt('gone')
      const sendId = await bounceBack(s, fixture, to)
      const [recipient] = (await sentEmail(s, sendId)).recipients
      expect(recipient).toMatchObject({ address: to, status: 'bounced', bounce_type: 'hard', status_code: status })
      if (typeof diagnostic === 'string') expect(recipient.diagnostic_code).toBe(diagnostic)
      else expect(recipient.diagnostic_code).toMatch(diagnostic)
      expect((await suppressions(s)).data).toMatchObject([{ address: to, reason: 'hard_bounce', send_id: sendId }])
      expectError((await send(s, to)).res, 403, 'recipient_not_allowed')
    })
  }

  test('Gmail, delayed 4.4.1: a soft bounce, not suppressed; a later hard bounce is not undone by another delay', async () => {
    const s = await sender()
    const to = rcpt('slow')
    const sendId = await bounceBack(s, 'gmail-delay.eml', to)
    expect((await sentEmail(s, sendId)).recipients).toMatchObject([{ address: to, status: 'bounced', bounce_type: 'soft', status_code: '4.4.1' }])
    const [event] = await until(
      () => events(s, 'email.bounced'),
      e => e.length === 1,
    )
    expect(event.bounce.recipients).toMatchObject([{ address: to, type: 'soft', status_code: '4.4.1' }])
    expect((await suppressions(s)).data).toEqual([])
    const next = await send(s, to)
    expect(next.res.status).toBe(200)

    // the second message bounces hard, then a late delay notice about it changes nothing
    const nextId = next.res.body.data.id
    await deliver(h.smtpPort, s.address, await report('postfix-hard.eml', { sender: s.address, recipient: to, original: next.relayed!.raw }))
    await deliver(h.smtpPort, s.address, await report('gmail-delay.eml', { sender: s.address, recipient: to, original: next.relayed!.raw }))
    expect((await sentEmail(s, nextId)).recipients).toMatchObject([{ status: 'bounced', bounce_type: 'hard', status_code: '5.1.1' }])
    expect((await sentEmail(s, sendId)).recipients).toMatchObject([{ bounce_type: 'soft' }])
  })

  test("only the recipient it names: the message's other recipients stay accepted", async () => {
    const s = await sender()
    const [gone, fine] = [rcpt('gone'), rcpt('fine')]
    const { res, relayed } = await send(s, [gone, fine])
    await deliver(h.smtpPort, s.address, await report('postfix-hard.eml', { sender: s.address, recipient: gone, original: relayed!.raw }))
    expect((await sentEmail(s, res.body.data.id)).recipients).toMatchObject([
      { address: gone, status: 'bounced' },
      { address: fine, status: 'accepted', bounce_type: null },
    ])
  })

  test("isolation: a report naming another organization's message changes nothing there, nor here", async () => {
    const a = await sender()
    const b = await sender()
    const to = rcpt('victim')
    const { res, relayed } = await send(a, to)
    // b's inbox gets a report about a's message (its Message-ID and recipient)
    await deliver(h.smtpPort, b.address, await report('postfix-hard.eml', { sender: b.address, recipient: to, original: relayed!.raw }))
    const [event] = await until(
      () => events(b, 'email.bounced'),
      e => e.length === 1,
    )
    expect(event.send_id).toBeUndefined()
    expect(event.bounce).toBeUndefined()
    expect((await sentEmail(a, res.body.data.id)).recipients).toMatchObject([{ address: to, status: 'accepted' }])
    expect((await suppressions(a)).data).toEqual([])
    expect((await suppressions(b)).data).toEqual([])
    expect((await send(a, to)).res.status).toBe(200)
  })

  test('a report about a recipient the message did not have, or a success notice, changes nothing', async () => {
    const s = await sender()
    const to = rcpt('kept')
    const { res, relayed } = await send(s, to)
    await deliver(h.smtpPort, s.address, await report('postfix-hard.eml', { sender: s.address, recipient: rcpt('stranger'), original: relayed!.raw }))
    const delivered = (await report('postfix-hard.eml', { sender: s.address, recipient: to, original: relayed!.raw }))
      .replace('Action: failed', 'Action: delivered')
      .replace('Status: 5.1.1', 'Status: 2.0.0')
    await deliver(h.smtpPort, s.address, delivered)
    await until(
      () => events(s, 'email.bounced'),
      e => e.length === 2,
    )
    expect((await sentEmail(s, res.body.data.id)).recipients).toMatchObject([{ address: to, status: 'accepted' }])
    expect((await suppressions(s)).data).toEqual([])
  })
})

describe('an abuse report (ARF)', () => {
  test('is email.complained with the send; the recipient complained and is suppressed', async () => {
    const s = await sender()
    const to = rcpt('angry')
    const { res, relayed } = await send(s, to)
    const sendId = res.body.data.id
    await deliver(
      h.smtpPort,
      s.address,
      await report('arf-abuse.eml', { sender: s.address, recipient: to, original: relayed!.raw }),
      'feedback@arf.mail.example-isp.com',
    )
    expect((await sentEmail(s, sendId)).recipients).toMatchObject([{ address: to, status: 'complained', bounce_type: null, feedback_type: 'abuse' }])
    const [event] = await until(
      () => events(s, 'email.complained'),
      e => e.length === 1,
    )
    expect(event).toMatchObject({ send_id: sendId, complaint: { send_id: sendId, source: 'arf', recipients: [{ address: to, feedback_type: 'abuse' }] } })
    expect((await suppressions(s)).data).toMatchObject([{ address: to, reason: 'complaint', detail: 'abuse', send_id: sendId }])
    const again = await send(s, to)
    expectError(again.res, 403, 'recipient_not_allowed')
    expect(again.res.body.error.gates[0]).toMatchObject({ name: 'suppression_list', reason: 'recipient_complained', subject: to })
    // stored as what it is
    const stored = await h.latest(s.org)
    expect(stored.event_type).toBe('email.complained')
  })
})

describe("a relay's permanent refusal at delivery", () => {
  test('550 to one recipient: that recipient bounced hard (source relay), email.bounced without an email, suppressed; the others went out', async () => {
    const s = await sender()
    const [gone, fine] = [rcpt('refused'), rcpt('fine')]
    relay.refuse.set(gone, `550 5.1.1 <${gone}>: Recipient address rejected: User unknown`)
    const { res } = await send(s, [fine, gone])
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ accepted: [fine], rejected: [gone] })
    const state = await sentEmail(s, res.body.data.id)
    expect(state.recipients).toMatchObject([
      { address: fine, status: 'accepted' },
      { address: gone, status: 'bounced', bounce_type: 'hard', status_code: '5.1.1', diagnostic_code: expect.stringContaining('550 5.1.1') },
    ])
    const [event] = await until(
      () => events(s, 'email.bounced'),
      e => e.length === 1,
    )
    expect(event).toMatchObject({
      send_id: res.body.data.id,
      email: null,
      bounce: { source: 'relay', email_id: state.email_id, recipients: [{ address: gone, type: 'hard', status_code: '5.1.1' }] },
    })
    expect((await suppressions(s)).data).toMatchObject([{ address: gone, reason: 'hard_bounce' }])
    expectError((await send(s, gone)).res, 403, 'recipient_not_allowed')
  })

  test('an endpoint whose event_types leave out email.bounced gets no relay bounce; the bounce is recorded all the same', async () => {
    const s = await sender({ event_types: ['email.received'] })
    const gone = rcpt('refused')
    relay.refuse.set(gone, `550 5.1.1 <${gone}>: User unknown`)
    const { res } = await send(s, [rcpt('fine'), gone])
    expect(res.status).toBe(200)
    expect((await suppressions(s)).data).toMatchObject([{ address: gone, reason: 'hard_bounce' }])
    const deliveries = (await h.request('GET', '/v1/webhooks/deliveries', { key: s.org.key })).body.data
    expect(deliveries).toEqual([])
  })

  test('every recipient refused: the send fails, and the 5xx is still a hard bounce; a 4xx is not', async () => {
    const s = await sender()
    const [gone, busy] = [rcpt('refused'), rcpt('busy')]
    relay.refuse.set(gone, `550 5.1.1 <${gone}>: User unknown`)
    relay.refuse.set(busy, '450 4.2.1 Mailbox busy, try later')
    const failed = await send(s, [gone])
    expectError(failed.res, 502, 'outbound_relay_failed')
    expect((await suppressions(s)).data).toMatchObject([{ address: gone, reason: 'hard_bounce' }])
    const deferred = await send(s, [busy])
    expect(deferred.res.status).toBeGreaterThanOrEqual(500)
    expect((await suppressions(s)).data).toHaveLength(1)
  })
})

describe('the suppression list', () => {
  test('added by hand with a note (201, then 200 as it is), refused sends name the reason, deleted by address', async () => {
    const s = await sender()
    const to = rcpt('manual')
    const added = await h.request('POST', '/v1/suppressions', { key: s.org.key, body: { address: to.toUpperCase(), detail: 'asked us to stop' } })
    expect(added.status).toBe(201)
    expect(added.body.data).toMatchObject({ address: to, reason: 'manual', detail: 'asked us to stop', send_id: null })
    const again = await h.request('POST', '/v1/suppressions', { key: s.org.key, body: { address: to } })
    expect(again.status).toBe(200)
    expect(again.body.data).toEqual(added.body.data)
    const refused = await send(s, to)
    expect(refused.res.body.error.gates).toMatchObject([
      { reason: 'recipient_suppressed', message: `${to} was added to the suppression list: asked us to stop` },
    ])
    expect((await h.request('DELETE', `/v1/suppressions/${to}`, { key: s.org.key })).status).toBe(200)
    expectError(await h.request('DELETE', `/v1/suppressions/${to}`, { key: s.org.key }), 404, 'not_found')
  })

  test('a scheduled send leaves out the addresses suppressed since it was made; with none left it fails', async () => {
    const s = await sender()
    const [kept, gone, alone] = [rcpt('kept'), rcpt('gone'), rcpt('alone')]
    const at = () => new Date(Date.now() + 1500).toISOString()
    const both = await h.request('POST', '/v1/send-mail', {
      key: s.org.key,
      body: { from: s.address, to: [kept, gone], subject: 'Later', body_text: 'x', scheduled_at: at() },
    })
    const single = await h.request('POST', '/v1/send-mail', {
      key: s.org.key,
      body: { from: s.address, to: alone, subject: 'Later', body_text: 'y', scheduled_at: at() },
    })
    expect([both.body.data.status, single.body.data.status]).toEqual(['scheduled', 'scheduled'])
    for (const address of [gone, alone]) await h.request('POST', '/v1/suppressions', { key: s.org.key, body: { address } })
    const done = await until(
      async () => [await sentEmail(s, both.body.data.id), await sentEmail(s, single.body.data.id)],
      ([a, b]) => a.status === 'executed' && b.status === 'failed',
    )
    expect(done[0]).toMatchObject({ accepted: [kept], rejected: [gone] })
    expect(done[1].error).toEqual({ code: 'recipient_not_allowed', message: `every recipient is on the suppression list: ${alone}` })
    const relayed = relay.messages.filter(m => m.to.includes(kept) || m.to.includes(gone) || m.to.includes(alone))
    expect(relayed.map(m => m.to)).toEqual([[kept]])
  })

  test('bad input is a validation_error naming the field', async () => {
    const s = await sender()
    expectError(await h.request('POST', '/v1/suppressions', { key: s.org.key, body: { address: 'not-an-address' } }), 400, 'validation_error', /^address: /)
    expectError(await h.request('POST', '/v1/suppressions', { key: s.org.key, body: {} }), 400, 'validation_error', /address/)
    expectError(
      await h.request('POST', '/v1/suppressions', { key: s.org.key, body: { address: rcpt('x'), detail: 'two\nlines' } }),
      400,
      'validation_error',
      /^detail: /,
    )
    expectError(await h.request('DELETE', '/v1/suppressions/nobody', { key: s.org.key }), 400, 'validation_error', /address/)
  })

  test("is the organization's own: another organization's entry is 404 and invisible", async () => {
    const a = await sender()
    const b = await sender()
    const to = rcpt('private')
    expect((await h.request('POST', '/v1/suppressions', { key: a.org.key, body: { address: to } })).status).toBe(201)
    expectError(await h.request('DELETE', `/v1/suppressions/${to}`, { key: b.org.key }), 404, 'not_found')
    expect((await suppressions(b)).data).toEqual([])
    expect((await send(b, to)).res.status).toBe(200)
    expect((await suppressions(a)).data).toHaveLength(1)
  })

  test('is paged newest first with a cursor', async () => {
    const s = await sender()
    const addresses = [rcpt('p1'), rcpt('p2'), rcpt('p3')]
    for (const address of addresses) await h.request('POST', '/v1/suppressions', { key: s.org.key, body: { address } })
    const first = await h.request('GET', '/v1/suppressions?limit=2', { key: s.org.key })
    expect(first.body.data.map((r: any) => r.address)).toEqual([addresses[2], addresses[1]])
    expect(first.body.meta).toMatchObject({ total: 3, limit: 2 })
    const second = await h.request('GET', `/v1/suppressions?limit=2&cursor=${first.body.meta.cursor}`, { key: s.org.key })
    expect(second.body.data.map((r: any) => r.address)).toEqual([addresses[0]])
    expect(second.body.meta.cursor).toBeNull()
  })
})
