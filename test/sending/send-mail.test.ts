import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createPublicKey } from 'node:crypto'
import { authenticate } from 'mailauth'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, rfc822, senderDomain, type InboundHarness } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { memoryResolver } from '../../src/dns/resolver'
import { signingKeyFor } from '../../src/mail/outbound/dkim'
import { startWorker } from '../../src/jobs/worker'
import { relayOf } from '../../src/sending/relay'
import { JOB_KINDS } from '../../src/job-kinds'
import { setSendLimitsCommand, UsageError } from '../../src/admin/commands'
import { markDomainVerified } from '../../src/domains/service'
import { executeJob } from '../../src/sending/execute'
import type { SendRow } from '../../src/sending/model'

let relay: TestRelay
let app: TestApp
let org: TestOrg
let from: string

beforeAll(async () => {
  relay = await startTestRelay()
  app = await testApp({ SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000' })
  org = await createOrg()
  from = await managedAddress(app.ctx, org.orgId)
})
afterAll(async () => {
  await relayOf(app.ctx).close()
  await relay.stop()
})

const send = (body: Record<string, unknown>, opts: { key?: string; org?: TestOrg; app?: TestApp } = {}) =>
  (opts.app ?? app).request('POST', '/v1/send-mail', { key: (opts.org ?? org).key, body, headers: opts.key ? { 'idempotency-key': opts.key } : {} })

const unique = () => crypto.randomUUID().slice(0, 8)

describe('POST /v1/send-mail through an SMTP relay', () => {
  test('queued once the relay accepted it; the relay got a DKIM-signed message mailauth verifies', async () => {
    const before = relay.messages.length
    const res = await send({
      from,
      from_name: 'Agent Smith',
      to: 'alice@example.com',
      cc: ['carol@example.com'],
      bcc: ['bob@example.com'],
      subject: `Héllo ${unique()}`,
      body_text: 'Hi Alice\n.\nbye',
      body_html: '<p>Hi Alice</p>',
    })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      status: 'queued',
      from,
      accepted: ['alice@example.com', 'carol@example.com', 'bob@example.com'],
      rejected: [],
      idempotent_replay: false,
    })
    expect(res.headers.get('idempotency-key')).toStartWith('derived_')
    const [message] = relay.messages.slice(before)
    expect(message!.to.sort()).toEqual(['alice@example.com', 'bob@example.com', 'carol@example.com'])
    expect(message!.raw).not.toMatch(/(^|[^\r])\n/)
    expect(message!.raw).not.toMatch(/^bcc:/im)
    expect(message!.raw).toMatch(/^From: "?Agent Smith"? <[^>]+>/m)
    const key = (await signingKeyFor(app.ctx, org.orgId, app.ctx.config.MANAGED_DOMAIN))!
    const pub = createPublicKey(key.privateKeyPem).export({ type: 'spki', format: 'der' }).toString('base64')
    const resolver = memoryResolver({ [`${key.selector}._domainkey.${key.domain}`]: { TXT: [[`v=DKIM1; k=rsa; p=${pub}`]] } })
    const verdict = await authenticate(message!.raw, { ip: '127.0.0.1', sender: from, mta: 'mx.test', resolver: resolver as never })
    expect(verdict.dkim.results[0]).toMatchObject({ signingDomain: key.domain, status: { result: 'pass' } })
    const state = await app.request('GET', `/v1/sent-emails/${res.body.data.id}`, { key: org.key })
    expect(state.body.data).toMatchObject({ status: 'queued', to: ['alice@example.com'], bcc: ['bob@example.com'], error: null })
    expect(state.body.data.relay_response).toMatch(/^250/)
    const stored = await app.request('GET', `/v1/emails/${state.body.data.email_id}`, { key: org.key })
    expect(stored.body.data.direction).toBe('outbound')
    expect(stored.body.data.text.trimEnd()).toBe('Hi Alice\n.\nbye')
  })

  test('an Idempotency-Key replays the original result without sending again; another payload is a conflict', async () => {
    const key = `send-${unique()}`
    const body = { from, to: 'dave@example.com', subject: 'once', body_text: 'x' }
    const before = relay.messages.length
    const first = await send(body, { key })
    const again = await send(body, { key })
    expect(again.body.data).toEqual({ ...first.body.data, idempotent_replay: true })
    expect(again.headers.get('idempotency-key')).toBe(key)
    expect(relay.messages.length - before).toBe(1)
    const other = await send({ ...body, subject: 'twice' }, { key })
    expectError(other, 409, 'conflict')
    expect(other.body.error.details.reason).toBe('idempotency_key_reused')
  })

  test('without a key, two identical sends in a row are one send', async () => {
    const body = { from, to: 'erin@example.com', subject: `same ${unique()}`, body_text: 'x' }
    const before = relay.messages.length
    const a = await send(body)
    const b = await send(body)
    expect(b.body.data.id).toBe(a.body.data.id)
    expect(b.body.data.idempotent_replay).toBe(true)
    expect(b.headers.get('idempotency-key')).toBe(a.headers.get('idempotency-key'))
    expect(relay.messages.length - before).toBe(1)
  })

  test('sends in flight together are written together, each once: one key sent at once is one send, the others busy or replays', async () => {
    const sql = await testSql()
    const key = `together-${unique()}`
    const subjects = Array.from({ length: 6 }, () => `together ${unique()}`)
    const before = relay.messages.length
    const [keyed, distinct] = await Promise.all([
      Promise.all(Array.from({ length: 4 }, () => send({ from, to: 'gus@example.com', subject: 'one key', body_text: 'x' }, { key }))),
      Promise.all(subjects.map(subject => send({ from, to: 'gus@example.com', subject, body_text: 'x' }))),
    ])
    expect(distinct.map(r => r.body.data?.status)).toEqual(subjects.map(() => 'queued'))
    const sent = keyed.filter(r => r.status === 200)
    expect(sent.filter(r => !r.body.data.idempotent_replay).length).toBe(1)
    expect(new Set(sent.map(r => r.body.data.id)).size).toBe(1)
    for (const r of keyed.filter(r => r.status !== 200)) {
      expectError(r, 409, 'conflict')
      expect(r.body.error.details.reason).toBe('idempotency_request_in_progress')
    }
    const [rows] = await sql<{ sends: number; emails: number; jobs: number }[]>`
      select (select count(*)::int from sends where org_id = ${org.orgId} and (request->>'subject' = any(${subjects}) or request->>'subject' = 'one key')) as sends,
             (select count(*)::int from emails where org_id = ${org.orgId} and (subject = any(${subjects}) or subject = 'one key')) as emails,
             (select count(*)::int from jobs where kind = 'send.execute' and payload->>'send_id' = any(${[...distinct, ...sent].map(r => r.body.data.id)})) as jobs`
    expect(rows).toEqual({ sends: 7, emails: 7, jobs: 0 })
    expect(relay.messages.length - before).toBe(7)
  })

  test('a relay that is down: 502 outbound_unreachable, nothing sent, and a retry with the same key sends', async () => {
    const down = await startTestRelay()
    const port = down.port
    await down.stop()
    const dead = await testApp({ SMTP_RELAY_URL: `smtp://127.0.0.1:${port}`, RELAY_TIMEOUT_MS: '1000' })
    try {
      const key = `down-${unique()}`
      const res = await send({ from, to: 'frank@example.com', subject: 'down', body_text: 'x' }, { key, app: dead })
      expectError(res, 502, 'outbound_unreachable')
      const state = await app.request('GET', `/v1/sent-emails/${res.body.error.details.send_id}`, { key: org.key })
      expect(state.body.data).toMatchObject({ status: 'failed', error: { code: 'outbound_unreachable' } })
      const before = relay.messages.length
      const retry = await send({ from, to: 'frank@example.com', subject: 'down', body_text: 'x' }, { key })
      expect(retry.status).toBe(200)
      expect(retry.body.data.idempotent_replay).toBe(false)
      expect(relay.messages.length - before).toBe(1)
    } finally {
      await relayOf(dead.ctx).close()
    }
  })

  test('a relay that never answers: 504 outbound_relay_timeout, and a retry with the same key sends nothing twice', async () => {
    const slow = await startTestRelay()
    slow.hang = true
    const hanging = await testApp({ SMTP_RELAY_URL: slow.url, RELAY_TIMEOUT_MS: '1500' })
    try {
      const key = `hang-${unique()}`
      const body = { from, to: 'gina@example.com', subject: 'maybe', body_text: 'x' }
      expectError(await send(body, { key, app: hanging }), 504, 'outbound_relay_timeout')
      slow.hang = false
      expectError(await send(body, { key, app: hanging }), 504, 'outbound_relay_timeout')
      expect(slow.messages.length).toBe(0)
    } finally {
      await relayOf(hanging.ctx).close()
      await slow.stop()
    }
  })
})

describe('what is committed when', () => {
  const jobsOf = async (sendId: string) => [
    ...(await (await testSql())<{ id: string; run_at: Date; locked_by: string | null; attempts: number; last_error: string | null }[]>`
      select id, run_at, locked_by, attempts, last_error from jobs where kind = 'send.execute' and payload->>'send_id' = ${sendId}`),
  ]
  const rawOf = async (emailId: string) =>
    Buffer.from((await (await testSql())<{ raw: Buffer }[]>`select raw from email_contents where email_id = ${emailId}`)[0]!.raw).toString('utf8')

  test('the relay gets exactly the outbound email stored with the send; its job is done', async () => {
    const before = relay.messages.length
    const res = await send({ from, to: 'hal@example.com', subject: `stored ${unique()}`, body_text: 'x' })
    expect(res.body.data.status).toBe('queued')
    const sent = (await app.request('GET', `/v1/sent-emails/${res.body.data.id}`, { key: org.key })).body.data
    const [message] = relay.messages.slice(before)
    expect(message!.raw).toBe(await rawOf(sent.email_id))
    expect(await jobsOf(res.body.data.id)).toEqual([])
  })

  test('before the relay is tried the send, its signed message and its job are committed; after a crash the job relays that message', async () => {
    const slow = await startTestRelay()
    slow.hang = true
    const hanging = await testApp({ SMTP_RELAY_URL: slow.url, RELAY_TIMEOUT_MS: '2000' })
    const sql = await testSql()
    const subject = `crash ${unique()}`
    try {
      const pending = send({ from, to: 'ivy@example.com', subject, body_text: 'x' }, { app: hanging })
      let row: SendRow | undefined
      for (let i = 0; i < 200 && !row; i++) {
        ;[row] = await sql<SendRow[]>`select * from sends where org_id = ${org.orgId} and request->>'subject' = ${subject}`
        if (!row) await Bun.sleep(5)
      }
      // as committed, whatever the relay does next
      const { status, ticks, relay_response, error_code, last_email_id } = row!
      expect({ status, ticks, relay_response, error_code }).toEqual({ status: 'sending', ticks: 1, relay_response: null, error_code: null })
      const stored = await rawOf(last_email_id!)
      expect(stored).toStartWith('DKIM-Signature: ')
      const [job] = await jobsOf(row!.id)
      expect(job!.run_at.getTime()).toBeGreaterThan(Date.now() + 50_000)
      // inserted claimed by the request, which runs it: no claim of its own, no worker woken
      expect(job).toMatchObject({ locked_by: expect.stringMatching(/^inline_/), attempts: 1 })
      expectError(await pending, 504, 'outbound_relay_timeout')
      // The process dying while the relay had the message: the row as it was before the answer.
      await sql`update sends set status = 'sending', relay_response = null, error_code = null, error_message = null where id = ${row!.id}`
      const before = relay.messages.length
      await executeJob.handle(app.ctx, { send_id: row!.id }, job as never)
      expect(relay.messages.slice(before).map(m => m.raw)).toEqual([stored])
      expect((await app.request('GET', `/v1/sent-emails/${row!.id}`, { key: org.key })).body.data).toMatchObject({ status: 'queued', email_id: last_email_id })
      const [count] = await sql<{ n: number }[]>`select count(*)::int as n from emails where org_id = ${org.orgId} and subject = ${subject}`
      expect(count!.n).toBe(1)
    } finally {
      slow.hang = false
      await relayOf(hanging.ctx).close()
      await slow.stop()
    }
  })

  test('a message that cannot be signed: the send is recorded unbuilt and its job fails and retries, as it always did', async () => {
    const owner = await createOrg()
    const domain = `broken-${unique()}.example.com`
    const sql = await testSql()
    await markDomainVerified(sql, app.ctx.keys, app.ctx.config.MANAGED_DOMAIN, owner.orgId, domain)
    await sql`update domains set dkim_private_sealed = ${app.ctx.keys.encrypt('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n')} where name = ${domain}`
    const before = relay.messages.length
    const res = await send({ from: `news@${domain}`, to: 'jo@example.com', subject: 'unsignable', body_text: 'x' }, { org: owner })
    expect(res.body.data).toMatchObject({ status: 'queued' })
    const [row] = await sql<SendRow[]>`select * from sends where id = ${res.body.data.id}`
    expect(row).toMatchObject({ status: 'sending', ticks: 0, last_email_id: null })
    const [job] = await jobsOf(row!.id)
    expect(job).toMatchObject({ locked_by: null, attempts: 1, last_error: expect.stringContaining('DKIM signing') })
    expect(relay.messages.length).toBe(before)
  })
})

describe('validation and header injection', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['CR LF in the subject', { subject: 'hi\r\nBcc: victim@example.com' }, /^subject: /],
    ['LF in the subject', { subject: 'hi\nX-Evil: 1' }, /^subject: /],
    ['CR LF in from_name', { from_name: 'A\r\nBcc: x@example.com' }, /^from_name: /],
    ['CR LF in a custom header value', { headers: { 'X-Tag': 'a\r\nBcc: x@example.com' } }, /^headers/],
    ['a header we do not allow', { headers: { Bcc: 'x@example.com' } }, /^headers/],
    ['CR LF in an attachment name', { attachments: [{ filename: 'a\r\n.txt', content_type: 'text/plain', content: 'aGk=' }] }, /^attachments\[0\]\.filename: /],
    ['an address with a newline', { to: 'a@example.com\r\nRCPT TO:<b@example.com>' }, /^to/],
    ['no recipient', { to: undefined }, /^to: /],
    ['an unknown field', { priority: 'high' }, /^priority: /],
  ]
  for (const [name, patch, message] of cases) {
    test(name, async () => {
      const before = relay.messages.length
      const body = { from, to: 'h@example.com', subject: 's', body_text: 'x', ...patch }
      expectError(await send(body), 400, 'validation_error', message)
      expectError(await app.request('POST', '/v1/send-mail/demo', { body }), 400, 'validation_error', message)
      expect(relay.messages.length).toBe(before)
    })
  }
})

describe('who may send', () => {
  test('from an address the organization does not own: 403 cannot_send_from_domain with the valid senders', async () => {
    const res = await send({ from: 'ceo@bank.example', to: 'x@example.com', subject: 's', body_text: 'x' })
    expectError(res, 403, 'cannot_send_from_domain')
    expect(res.body.error.details.valid_senders).toContain(from)
    const status = await app.request('GET', '/v1/outbound/status', { key: org.key })
    expect(status.body.data).toMatchObject({ relay: 'smtp', managed_inboxes: expect.arrayContaining([from]) })
  })

  /** `n` sends counted for the limits in the last minutes, as if made through send-mail. */
  const sendsMade = async (orgId: string, n: number) => {
    const sql = await testSql()
    await sql`
      insert into send_counts (org_id, span, start, sends)
      values (${orgId}, 'minute', date_trunc('minute', now()) - interval '5 minutes', ${n}), (${orgId}, 'hour', date_trunc('hour', now()), ${n})`
  }

  test('sends are counted for the limits as they are written: this minute and this hour, old counts out of the windows', async () => {
    const counted = await createOrg()
    const address = await managedAddress(app.ctx, counted.orgId)
    const sql = await testSql()
    await sql`
      insert into send_counts (org_id, span, start, sends)
      values (${counted.orgId}, 'minute', now() - interval '2 hours', 5000), (${counted.orgId}, 'hour', now() - interval '2 days', 50000)`
    const results = await Promise.all(
      Array.from({ length: 3 }, () => send({ from: address, to: 'x@example.com', subject: `counted ${unique()}`, body_text: 'x' }, { org: counted })),
    )
    expect(results.map(r => r.body.data.status)).toEqual(['queued', 'queued', 'queued'])
    const rows = await sql<{ span: string; sends: number }[]>`
      select span, sum(sends)::int as sends from send_counts where org_id = ${counted.orgId} and start > now() - interval '1 hour' group by span order by span`
    expect(rows.map(r => [r.span, r.sends])).toEqual([
      ['hour', 3],
      ['minute', 3],
    ])
  })

  test('sends at once cannot together pass a limit: as many as fit are sent, the others answer 429', async () => {
    const edge = await createOrg()
    const address = await managedAddress(app.ctx, edge.orgId)
    const sql = await testSql()
    await setSendLimitsCommand(sql, edge.orgId, '12', '1000')
    await sendsMade(edge.orgId, 10)
    const before = relay.messages.length
    const results = await Promise.all(
      Array.from({ length: 6 }, () => send({ from: address, to: 'x@example.com', subject: `edge ${unique()}`, body_text: 'x' }, { org: edge })),
    )
    expect(results.filter(r => r.status === 200).map(r => r.body.data.status)).toEqual(['queued', 'queued'])
    for (const r of results.filter(r => r.status !== 200))
      expectError(r, 429, 'rate_limited', 'send-mail: at most 12 per hour per organization; retry after 3600 seconds')
    expect(relay.messages.length - before).toBe(2)
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from sends where org_id = ${edge.orgId}`
    expect(row!.n).toBe(2)
  })

  test('the per-hour abuse limit answers 429 rate_limited', async () => {
    const busy = await createOrg()
    const address = await managedAddress(app.ctx, busy.orgId)
    await sendsMade(busy.orgId, 1000)
    expectError(await send({ from: address, to: 'x@example.com', subject: 's', body_text: 'x' }, { org: busy }), 429, 'rate_limited')
  })

  test('an operator override (admin org set-send-limits) replaces the plan limits; "plan" restores them', async () => {
    const busy = await createOrg()
    const address = await managedAddress(app.ctx, busy.orgId)
    const sql = await testSql()
    await sendsMade(busy.orgId, 1000)
    const body = () => ({ from: address, to: 'x@example.com', subject: `s ${unique()}`, body_text: 'x' })
    expect(await setSendLimitsCommand(sql, busy.orgId, '5000', '20000')).toEqual({ org_id: busy.orgId, send_per_hour: 5000, send_per_day: 20000 })
    expect((await send(body(), { org: busy })).body.data.status).toBe('queued')
    expect((await app.request('GET', '/v1/account', { key: busy.key })).body.data.limits).toMatchObject({ send_per_hour: 5000, send_per_day: 20000 })
    // an override may also be stricter than the plan: the day limit is the one hit here
    await setSendLimitsCommand(sql, busy.orgId, '5000', '1001')
    const res = await send(body(), { org: busy })
    expectError(res, 429, 'rate_limited', 'send-mail: at most 1001 per day per organization; retry after 86400 seconds')
    expect(res.headers.get('retry-after')).toBe('86400')
    expect(await setSendLimitsCommand(sql, busy.orgId, 'plan', 'plan')).toEqual({ org_id: busy.orgId, send_per_hour: 'plan', send_per_day: 'plan' })
    expectError(await send(body(), { org: busy }), 429, 'rate_limited', 'send-mail: at most 1000 per hour per organization; retry after 3600 seconds')
    expect((await app.request('GET', '/v1/account', { key: busy.key })).body.data.limits).toMatchObject({ send_per_hour: 1000, send_per_day: 10000 })
  })

  test('set-send-limits refuses what is not a positive integer or "plan"', async () => {
    const sql = await testSql()
    for (const [hour, day] of [
      ['0', '10'],
      ['10', undefined],
      ['1.5', '10'],
      ['10', 'lots'],
    ]) {
      await expect(setSendLimitsCommand(sql, org.orgId, hour, day)).rejects.toBeInstanceOf(UsageError)
    }
    await expect(setSendLimitsCommand(sql, undefined, '10', '10')).rejects.toBeInstanceOf(UsageError)
  })
})

describe('the sandbox', () => {
  test('POST /v1/send-mail/demo is public, validates, and stores nothing', async () => {
    const res = await app.request('POST', '/v1/send-mail/demo', { body: { from: 'a@example.com', to: ['b@example.com'], subject: 's', body_text: 'x' } })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ status: 'queued', demo: true, accepted: ['b@example.com'], rejected: [], idempotent_replay: false })
    const sql = await testSql()
    expect((await sql`select 1 from sends where id = ${res.body.data.id}`).length).toBe(0)
  })
})

describe('local delivery, gates, replies, schedules and repeats', () => {
  let h: InboundHarness
  beforeAll(async () => {
    h = await inboundHarness()
  })
  afterAll(() => h.stop())

  test('mail to another organization hosted here arrives in its inbox, DKIM-verified', async () => {
    const a = await createOrg()
    const b = await createOrg()
    const aAddress = await managedAddress(h.ctx, a.orgId)
    const bAddress = await managedAddress(h.ctx, b.orgId)
    const res = await send({ from: aAddress, to: bAddress, subject: 'local hello', body_text: 'hi b' }, { org: a, app: h })
    expect(res.body.data.status).toBe('queued')
    const inbox = await h.request('GET', '/v1/emails', { key: b.key })
    const email = (await h.request('GET', `/v1/emails/${inbox.body.data[0].id}`, { key: b.key })).body.data
    expect(email).toMatchObject({ subject: 'local hello', from: { address: aAddress }, direction: 'inbound' })
    expect(email.authentication.dkim[0]).toMatchObject({ result: 'pass', domain: h.ctx.config.MANAGED_DOMAIN })
  })

  test('a reply keeps the thread and carries In-Reply-To and References', async () => {
    const a = await createOrg()
    const address = await managedAddress(h.ctx, a.orgId)
    const original = await h.transport.sendMail({ from: 'Pat <pat@sender.example>', to: address, subject: 'Question', text: '?' })
    const inbound = (await h.request('GET', '/v1/emails', { key: a.key })).body.data[0]
    const res = await send({ from: address, in_reply_to_email_id: inbound.id, subject: 'Re: Question', body_text: 'answer' }, { org: a, app: h })
    expect(res.body.data).toMatchObject({ status: 'queued', accepted: ['pat@sender.example'], thread_id: inbound.thread_id })
    const sent = (await h.request('GET', `/v1/sent-emails/${res.body.data.id}`, { key: a.key })).body.data
    const email = (await h.request('GET', `/v1/emails/${sent.email_id}`, { key: a.key })).body.data
    expect(email).toMatchObject({ in_reply_to: original.messageId, references: [original.messageId], thread_id: inbound.thread_id })
  })

  test('mail that cannot be replied to: 422 inbound_not_repliable with the reason', async () => {
    const a = await createOrg()
    const address = await managedAddress(h.ctx, a.orgId)
    const reply = async () => {
      const id = (await h.request('GET', '/v1/emails?limit=1', { key: a.key })).body.data[0].id
      return send({ from: address, in_reply_to_email_id: id, subject: 're', body_text: 'x' }, { org: a, app: h })
    }
    await h.transport.sendMail({ from: 'noreply@sender.example', to: address, subject: 'Your receipt', text: 'x' })
    let res = await reply()
    expectError(res, 422, 'inbound_not_repliable')
    expect(res.body.error.details.reason).toBe('no_reply_sender')
    const b = 'b0'
    await h.transport.sendMail({
      envelope: { from: '', to: [address] } as never,
      raw: rfc822(
        {
          From: 'MAILER-DAEMON@sender.example',
          To: address,
          Subject: 'Undelivered',
          'Content-Type': `multipart/report; report-type=delivery-status; boundary="${b}"`,
        },
        `--${b}\nContent-Type: text/plain\n\nfailed\n--${b}--\n`,
      ),
    })
    res = await reply()
    expect(res.body.error.details.reason).toBe('bounce')
  })

  test('the reply-only agent plan: every gate reason, then a recipient who wrote first with authenticated mail', async () => {
    const agent = await createOrg({ plan: 'agent' })
    const address = await managedAddress(h.ctx, agent.orgId)
    const gateOf = async (to: string) => {
      const res = await send({ from: address, to, subject: 'hello', body_text: 'x' }, { org: agent, app: h })
      if (res.status === 200) return 'allowed'
      expectError(res, 403, 'recipient_not_allowed')
      const [gate] = res.body.error.gates
      expect(gate).toMatchObject({ name: 'send_to_known_addresses', subject: to, docs_url: expect.any(String) })
      return gate
    }
    const stranger = `stranger-${unique()}@nowhere.example`
    expect(await gateOf(stranger)).toMatchObject({ reason: 'recipient_not_known', fix: { action: 'wait_for_inbound', subject: stranger } })

    const unsigned = `u-${unique()}@sender.example`
    await h.transport.sendMail({ from: unsigned, to: address, subject: 'hi', text: 'x' })
    expect(await gateOf(unsigned)).toMatchObject({ reason: 'recipient_unauthenticated', fix: { action: 'sender_must_fix_authentication' } })

    const domain = `weak-${unique()}.example`
    const weak = senderDomain(h.dns, domain)
    const weakSender = `w@${domain}`
    const signedWithoutTo = await weak.sign(rfc822({ From: weakSender, Subject: 'hi', 'Message-ID': `<${unique()}@x>` }, 'x\n'))
    await h.transport.sendMail({ envelope: { from: weakSender, to: [address] }, raw: signedWithoutTo.replace('\r\n\r\n', `\r\nTo: ${address}\r\n\r\n`) })
    expect(await gateOf(weakSender)).toMatchObject({ reason: 'recipient_weak_binding', fix: { action: 'sender_dkim_must_sign_to_header' } })

    const reporter = `dmarc-${unique()}@sender.example`
    await h.transport.sendMail({
      from: reporter,
      to: address,
      subject: 'Report Domain: x Submitter: y',
      text: 'r',
      attachments: [{ filename: 'r.xml.gz', content: Buffer.from('x'), contentType: 'application/gzip' }],
    })
    expect(await gateOf(reporter)).toMatchObject({ reason: 'recipient_only_sent_reports' })

    const goodDomain = `good-${unique()}.example`
    const good = senderDomain(h.dns, goodDomain)
    const friend = `friend@${goodDomain}`
    await h.transport.sendMail({
      envelope: { from: friend, to: [address] },
      raw: await good.sign(rfc822({ From: friend, To: address, Subject: 'hi', 'Message-ID': `<${unique()}@x>` }, 'x\n')),
    })
    expect(await gateOf(friend)).toBe('allowed')
  })

  test('a scheduled send waits for its time (controllable clock), can be rescheduled, and is then executed', async () => {
    const a = await createOrg()
    const b = await createOrg()
    const aAddress = await managedAddress(h.ctx, a.orgId)
    const bAddress = await managedAddress(h.ctx, b.orgId)
    const at = new Date(Date.now() + 3600_000)
    const res = await send(
      { from: aAddress, to: bAddress, subject: 'later', body_text: 'x', scheduled_at: at.toISOString().replace('Z', '+00:00') },
      { org: a, app: h },
    )
    expect(res.body.data).toMatchObject({ status: 'scheduled', scheduled_at: at.toISOString() })
    const id = res.body.data.id
    const later = new Date(at.getTime() + 1800_000)
    const moved = await h.request('PATCH', `/v1/sent-emails/${id}`, { key: a.key, body: { scheduled_at: later.toISOString() } })
    expect(moved.body.data).toMatchObject({ status: 'scheduled', scheduled_at: later.toISOString() })
    let now = new Date(at.getTime() + 60_000)
    const worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 20, clock: () => now })
    try {
      await Bun.sleep(200)
      expect((await h.request('GET', `/v1/sent-emails/${id}`, { key: a.key })).body.data.status).toBe('scheduled')
      now = new Date(later.getTime() + 1000)
      worker.wake()
      await worker.drain()
      expect((await h.request('GET', `/v1/sent-emails/${id}`, { key: a.key })).body.data.status).toBe('executed')
      expect((await h.request('GET', '/v1/emails', { key: b.key })).body.data[0].subject).toBe('later')
      expectError(await h.request('PATCH', `/v1/sent-emails/${id}`, { key: a.key, body: { scheduled_at: later.toISOString() } }), 409, 'not_scheduled')
      expectError(await h.request('POST', `/v1/sent-emails/${id}/cancel`, { key: a.key }), 409, 'not_scheduled')
    } finally {
      await worker.stop(1000)
    }
  })

  test('a canceled scheduled send never goes out', async () => {
    const a = await createOrg()
    const aAddress = await managedAddress(h.ctx, a.orgId)
    const res = await send(
      { from: aAddress, to: 'x@example.com', subject: 'never', body_text: 'x', scheduled_at: new Date(Date.now() + 60_000).toISOString() },
      { org: a, app: h },
    )
    const canceled = await h.request('POST', `/v1/sent-emails/${res.body.data.id}/cancel`, { key: a.key })
    expect(canceled.body.data.status).toBe('canceled')
    const worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 20, clock: () => new Date(Date.now() + 3600_000) })
    await worker.drain()
    await worker.stop(1000)
    expect((await h.request('GET', `/v1/sent-emails/${res.body.data.id}`, { key: a.key })).body.data).toMatchObject({ status: 'canceled', email_id: null })
    expectError(await h.request('POST', `/v1/sent-emails/${res.body.data.id}/cancel`, { key: a.key }), 409, 'not_scheduled')
    const other = await createOrg()
    expectError(await h.request('GET', `/v1/sent-emails/${res.body.data.id}`, { key: other.key }), 404, 'not_found')
  })

  test('a repeat ticks in one thread with repeat.tick interactions until the recipient stops it', async () => {
    const a = await createOrg()
    const b = await createOrg()
    const aAddress = await managedAddress(h.ctx, a.orgId)
    const bAddress = await managedAddress(h.ctx, b.orgId)
    const res = await send({ from: aAddress, to: bAddress, subject: 'Status', body_text: 'tick', repeat: { every_minutes: 10 } }, { org: a, app: h })
    expect(res.body.data.status).toBe('queued')
    let now = new Date()
    const worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 20, clock: () => now })
    try {
      now = new Date(Date.now() + 11 * 60_000)
      worker.wake()
      await worker.drain()
      const ticks = (await h.request('GET', '/v1/emails', { key: b.key })).body.data
      expect(ticks.map((e: { subject: string }) => e.subject)).toEqual(['Re: Status', 'Status'])
      expect(new Set(ticks.map((e: { thread_id: string }) => e.thread_id)).size).toBe(1)
      const state = (await h.request('GET', `/v1/sent-emails/${res.body.data.id}`, { key: a.key })).body.data
      expect(state.repeat).toMatchObject({ every_minutes: 10, ticks: 2, stopped_at: null })
      const raw = await h.app.handle(new Request(`http://api.test.local/v1/emails/${ticks[0].id}/raw`, { headers: { authorization: `Bearer ${b.key}` } }))
      expect(await raw.text()).toContain('interaction.json')
      const stop = await h.request('POST', `/v1/emails/${ticks[0].id}/repeat-stop`, { key: b.key })
      expect(stop.body.data).toEqual({ repeat_id: res.body.data.id, stopped: true })
      now = new Date(Date.now() + 60 * 60_000)
      worker.wake()
      await worker.drain()
      expect((await h.request('GET', '/v1/emails', { key: b.key })).body.meta.total).toBe(2)
      expect((await h.request('GET', `/v1/sent-emails/${res.body.data.id}`, { key: a.key })).body.data.repeat).toMatchObject({
        ticks: 2,
        stopped_by: `recipient:${b.orgId}`,
      })
      const notATick = (await h.request('GET', '/v1/emails', { key: a.key })).body.data[0]
      expectError(await h.request('POST', `/v1/emails/${notATick.id}/repeat-stop`, { key: b.key }), 404, 'not_found')
    } finally {
      await worker.stop(1000)
    }
  })
})
