/**
 * POST /v1/send-mail with `Prefer: respond-async` (RFC 7240): 202 once the send, its signed
 * message and its job are committed, the relay after the answer (in this process), its outcome on
 * the send, in the changes feed and as webhooks. Without the header nothing changes (send-mail.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { until } from '../helpers/until'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { relayOf } from '../../src/sending/relay'
import { EARLIEST } from '../../src/changes/feed'

let relay: TestRelay
let app: TestApp
let worker: Worker
let receiver: Receiver

beforeAll(async () => {
  relay = await startTestRelay()
  app = await testApp({
    SMTP_RELAY_URL: relay.url,
    RELAY_TIMEOUT_MS: '10000',
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_RETRY_SCHEDULE: '1,1',
    WEBHOOK_TIMEOUT_MS: '10000',
  })
  // delivers the webhooks; the send's own job is claimed by the request's process, which relays it
  worker = await startWorker(app.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  receiver = startReceiver()
})
afterAll(async () => {
  await worker.stop(1000)
  receiver.stop()
  await relayOf(app.ctx).close()
  await relay.stop()
})

interface Sender {
  org: TestOrg
  from: string
  /** the receiver's path of the organization's webhook endpoint */
  hook: string
}

/** An organization with an inbox to send from and an org-wide webhook endpoint on the receiver. */
async function sender(): Promise<Sender> {
  const org = await createOrg()
  const from = await managedAddress(app.ctx, org.orgId)
  const sql = await testSql()
  const id = randomUUIDv7()
  await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${id}, ${org.orgId}, 'http', ${receiver.url(`/${id}`)}, true, '{}')`
  return { org, from, hook: `/${id}` }
}

const unique = () => crypto.randomUUID().slice(0, 8)
const rcpt = (tag: string) => `${tag}-${unique()}@example.com`
const ASYNC = { prefer: 'respond-async' }

const send = (s: Sender, body: Record<string, unknown>, headers: Record<string, string> = ASYNC, on: TestApp = app) =>
  on.request('POST', '/v1/send-mail', { key: s.org.key, body: { from: s.from, subject: `Hello ${unique()}`, body_text: 'Hi there.', ...body }, headers })
const sentEmail = async (s: Sender, id: string, on: TestApp = app) => (await on.request('GET', `/v1/sent-emails/${id}`, { key: s.org.key })).body.data
const changesOf = async (s: Sender, sendId: string, on: TestApp = app) =>
  (
    (await on.request('GET', `/v1/changes?cursor=${EARLIEST}`, { key: s.org.key })).body.data as {
      type: string
      resource: { id: string }
      data: Record<string, unknown>
    }[]
  ).filter(c => c.resource.id === sendId)
const events = (s: Sender, type: string) => receiver.requests.filter(r => r.path === s.hook && r.json?.event === type).map(r => r.json)

describe('Prefer: respond-async', () => {
  test('202 with Preference-Applied and status queued once committed; the job relays after the answer and the send shows the relay answer', async () => {
    const s = await sender()
    const [to, cc] = [rcpt('alice'), rcpt('carol')]
    const res = await send(s, { to, cc: [cc] })
    expect(res.status).toBe(202)
    expect(res.headers.get('preference-applied')).toBe('respond-async')
    expect(res.headers.get('idempotency-key')).toStartWith('derived_')
    expect(res.body.data).toMatchObject({ status: 'queued', from: s.from, accepted: [to, cc], rejected: [], idempotent_replay: false })
    const state = await until(
      () => sentEmail(s, res.body.data.id),
      d => d.status !== 'sending',
    )
    expect(state).toMatchObject({ status: 'queued', accepted: [to, cc], rejected: [], error: null })
    expect(state.relay_response).toMatch(/^250/)
    const message = relay.messages.find(m => m.to.includes(to))!
    expect(message.raw).toStartWith('DKIM-Signature:')
    expect(relay.messages.filter(m => m.to.includes(to))).toHaveLength(1)
    // the feed has the send, its stored message and its relay outcome
    const changes = await changesOf(s, res.body.data.id)
    expect(changes.map(c => c.type)).toEqual(['send.created', 'send.status_changed'])
    expect(changes[1]!.data).toMatchObject({ status: 'queued', error_code: null })
  })

  test('a relay that refuses a recipient: both accepted at the answer; the send, the feed and the email.bounced webhook show the refusal', async () => {
    const s = await sender()
    const [fine, gone] = [rcpt('fine'), rcpt('gone')]
    relay.refuse.set(gone, `550 5.1.1 <${gone}>: Recipient address rejected: User unknown`)
    const res = await send(s, { to: [fine, gone] })
    expect(res.status).toBe(202)
    expect(res.body.data).toMatchObject({ status: 'queued', accepted: [fine, gone], rejected: [] })
    const [event] = await until(
      async () => events(s, 'email.bounced'),
      e => e.length === 1,
    )
    expect(event).toMatchObject({ send_id: res.body.data.id, email: null, bounce: { source: 'relay', recipients: [{ address: gone, type: 'hard' }] } })
    const state = await sentEmail(s, res.body.data.id)
    expect(state).toMatchObject({ status: 'queued', accepted: [fine], rejected: [gone] })
    expect(state.recipients).toMatchObject([
      { address: fine, status: 'accepted' },
      { address: gone, status: 'bounced', bounce_type: 'hard', status_code: '5.1.1' },
    ])
    expect((await changesOf(s, res.body.data.id)).map(c => c.type)).toContain('send.status_changed')
  })

  test('every recipient refused: the answer was 202; the send fails with the relay error, in the feed too', async () => {
    const s = await sender()
    const gone = rcpt('refused')
    relay.refuse.set(gone, `550 5.1.1 <${gone}>: User unknown`)
    const key = `refused-${unique()}`
    const res = await send(s, { to: gone, subject: 'refused' }, { ...ASYNC, 'idempotency-key': key })
    expect(res.status).toBe(202)
    const state = await until(
      () => sentEmail(s, res.body.data.id),
      d => d.status !== 'sending',
    )
    expect(state).toMatchObject({ status: 'failed', error: { code: 'outbound_relay_failed' } })
    const changed = (await changesOf(s, res.body.data.id)).find(c => c.type === 'send.status_changed')
    expect(changed?.data).toMatchObject({ status: 'failed', error_code: 'outbound_relay_failed' })
    // a retry with the same key answers the original 202; the outcome is the send's to read
    const again = await send(s, { to: gone, subject: 'refused' }, { ...ASYNC, 'idempotency-key': key })
    expect(again.status).toBe(202)
    expect(again.body.data).toEqual({ ...res.body.data, idempotent_replay: true })
  })

  test('a retry with the same Idempotency-Key answers the original 202 (idempotent_replay) and sends once, before and after the relay', async () => {
    const s = await sender()
    const to = rcpt('dave')
    const key = `async-${unique()}`
    const body = { to, subject: 'once' }
    const first = await send(s, body, { ...ASYNC, 'idempotency-key': key })
    const again = await send(s, body, { ...ASYNC, 'idempotency-key': key })
    expect(first.status).toBe(202)
    expect(again.status).toBe(202)
    expect(again.headers.get('preference-applied')).toBe('respond-async')
    expect(again.body.data).toEqual({ ...first.body.data, idempotent_replay: true })
    await until(
      () => sentEmail(s, first.body.data.id),
      d => d.status === 'queued',
    )
    const later = await send(s, body, { 'idempotency-key': key })
    expect(later.status).toBe(202)
    expect(later.body.data).toEqual({ ...first.body.data, idempotent_replay: true })
    expect(relay.messages.filter(m => m.to.includes(to))).toHaveLength(1)
  })

  test('the suppression gate still refuses at the answer: 403 recipient_not_allowed, nothing sent', async () => {
    const s = await sender()
    const to = rcpt('listed')
    expect((await app.request('POST', '/v1/suppressions', { key: s.org.key, body: { address: to } })).status).toBe(201)
    const res = await send(s, { to })
    expectError(res, 403, 'recipient_not_allowed')
    expect(res.headers.get('preference-applied')).toBeNull()
    expect((await app.request('GET', '/v1/sent-emails', { key: s.org.key })).body.data).toEqual([])
  })

  test('other preferences are ignored: without respond-async the answer waits for the relay (200); with it among others, 202', async () => {
    const s = await sender()
    const plain = await send(s, { to: rcpt('plain') }, { prefer: 'return=minimal' })
    expect(plain.status).toBe(200)
    expect(plain.headers.get('preference-applied')).toBeNull()
    expect((await sentEmail(s, plain.body.data.id)).relay_response).toMatch(/^250/)
    const quoted = await send(s, { to: rcpt('quoted') }, { prefer: 'foo="a, respond-async"' })
    expect(quoted.status).toBe(200)
    const mixed = await send(s, { to: rcpt('mixed') }, { prefer: 'wait=10, Respond-Async; x=1' })
    expect(mixed.status).toBe(202)
    expect(mixed.headers.get('preference-applied')).toBe('respond-async')
  })

  test('a scheduled send answers as without the header: 200 scheduled, no Preference-Applied', async () => {
    const s = await sender()
    const res = await send(s, { to: rcpt('later'), scheduled_at: new Date(Date.now() + 3_600_000).toISOString() })
    expect(res.status).toBe(200)
    expect(res.body.data.status).toBe('scheduled')
    expect(res.headers.get('preference-applied')).toBeNull()
  })

  test('a batch: each immediate message answered 202 queued, the batch 200 with Preference-Applied; all relayed', async () => {
    const s = await sender()
    const recipients = [rcpt('b1'), rcpt('b2')]
    const res = await app.request('POST', '/v1/send-mail/batch', {
      key: s.org.key,
      headers: ASYNC,
      body: { messages: recipients.map(to => ({ from: s.from, to, subject: `batch ${unique()}`, body_text: 'x' })) },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('preference-applied')).toBe('respond-async')
    expect(res.body.data.map((r: { status: number; data: { status: string } }) => [r.status, r.data.status])).toEqual([
      [202, 'queued'],
      [202, 'queued'],
    ])
    await until(
      async () => relay.messages.filter(m => recipients.some(r => m.to.includes(r))),
      m => m.length === 2,
    )
    expect(relay.messages.filter(m => recipients.some(r => m.to.includes(r)))).toHaveLength(2)
  })
})

test('a forward takes the header too: 202, then relayed', async () => {
  const s = await sender()
  const first = await send(s, { to: rcpt('orig') })
  const original = await until(
    () => sentEmail(s, first.body.data.id),
    d => d.status === 'queued',
  )
  const to = rcpt('fwd')
  const res = await app.request('POST', `/v1/emails/${original.email_id}/forward`, { key: s.org.key, headers: ASYNC, body: { from: s.from, to } })
  expect(res.status).toBe(202)
  expect(res.headers.get('preference-applied')).toBe('respond-async')
  expect(res.body.data).toMatchObject({ status: 'queued', accepted: [to], thread_id: original.thread_id })
  const state = await until(
    () => sentEmail(s, res.body.data.id),
    d => d.status !== 'sending',
  )
  expect(state.status).toBe('queued')
  expect(relay.messages.find(m => m.to.includes(to))?.raw).toMatch(/^Subject: Fwd: /m)
})

describe('a relay that never answers', () => {
  let hung: TestRelay
  let slow: TestApp
  beforeAll(async () => {
    hung = await startTestRelay()
    hung.hang = true
    slow = await testApp({ SMTP_RELAY_URL: hung.url, RELAY_TIMEOUT_MS: '1500' })
  })
  afterAll(async () => {
    await relayOf(slow.ctx).close()
    await hung.stop()
  })

  test('the answer does not wait for it: 202 at once, the send sending, then failed with outbound_relay_timeout', async () => {
    const org = await createOrg()
    const s = { org, from: await managedAddress(slow.ctx, org.orgId), hook: '' }
    const started = performance.now()
    const res = await send(s, { to: rcpt('slow') }, ASYNC, slow)
    expect(res.status).toBe(202)
    expect(performance.now() - started).toBeLessThan(1500)
    expect((await sentEmail(s, res.body.data.id, slow)).status).toBe('sending')
    const state = await until(
      () => sentEmail(s, res.body.data.id, slow),
      d => d.status !== 'sending',
    )
    expect(state).toMatchObject({ status: 'failed', error: { code: 'outbound_relay_timeout' } })
    const changed = (await changesOf(s, res.body.data.id, slow)).find(c => c.type === 'send.status_changed')
    expect(changed?.data).toMatchObject({ status: 'failed', error_code: 'outbound_relay_timeout' })
  })
})
