/**
 * POST /v1/send-mail/batch through a real SMTP relay: each message answered on its own, in
 * order; the batch idempotent under one key; every message counted against the send limits.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { relayOf } from '../../src/sending/relay'
import { setSendLimitsCommand } from '../../src/admin/commands'

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

const unique = () => crypto.randomUUID().slice(0, 8)
const batch = (messages: unknown, opts: { key?: string; org?: TestOrg } = {}) =>
  app.request('POST', '/v1/send-mail/batch', { key: (opts.org ?? org).key, body: { messages }, headers: opts.key ? { 'idempotency-key': opts.key } : {} })
const relayedSubjects = (since: number) => relay.messages.slice(since).map(m => /^Subject: (.*)$/m.exec(m.raw)?.[1])

describe('POST /v1/send-mail/batch', () => {
  test('mixed valid and invalid messages: each answered in order, only the valid ones relayed, once each', async () => {
    const tag = unique()
    const before = relay.messages.length
    const messages = [
      { from, to: 'alice@example.com', subject: `one ${tag}`, body_text: 'hi' },
      { from: 'not an address', to: 'bob@example.com', subject: 'bad', body_text: 'x' },
      { from, to: 'carol@example.com', subject: `three ${tag}`, body_text: 'hi' },
      { from: 'someone@not-ours.example', to: 'dan@example.com', subject: 'not ours', body_text: 'x' },
      { from, to: 'erin@example.com', body_text: 'no subject' },
    ]
    const res = await batch(messages, { key: `batch-${tag}` })
    expect(res.status).toBe(200)
    const results = res.body.data as { success: boolean; status: number; data?: { id: string; status: string }; error?: { code: string; message: string } }[]
    expect(results.map(r => [r.success, r.status])).toEqual([
      [true, 200],
      [false, 400],
      [true, 200],
      [false, 403],
      [false, 400],
    ])
    expect(results[0]!.data).toMatchObject({ status: 'queued', from, accepted: ['alice@example.com'] })
    expect(results[1]!.error).toMatchObject({ code: 'validation_error' })
    expect(results[1]!.error!.message).toStartWith('from: ')
    expect(results[3]!.error!.code).toBe('cannot_send_from_domain')
    expect(results[4]!.error!.message).toBe('subject: is required (unless template is given)')
    await relay.waitFor(before + 2)
    expect(relayedSubjects(before).sort()).toEqual([`one ${tag}`, `three ${tag}`])

    // the same key: the same array, nothing sent again
    const again = await batch(messages, { key: `batch-${tag}` })
    expect(again.status).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body.data).toEqual(res.body.data)
    await Bun.sleep(200)
    expect(relay.messages.length).toBe(before + 2)
    // the key with another batch is a conflict
    expectError(await batch([{ from, to: 'x@example.com', subject: 'other', body_text: 'x' }], { key: `batch-${tag}` }), 409, 'conflict')
    // each send is a send like any other
    const sent = await app.request('GET', `/v1/sent-emails/${results[2]!.data!.id}`, { key: org.key })
    expect(sent.body.data).toMatchObject({ status: 'queued', to: ['carol@example.com'] })
  })

  test('every message counts against the send limits: past them, the rest answer 429', async () => {
    const edge = await createOrg()
    const address = await managedAddress(app.ctx, edge.orgId)
    await setSendLimitsCommand(await testSql(), edge.orgId, '3', '1000')
    const before = relay.messages.length
    const res = await batch(
      Array.from({ length: 5 }, (_, i) => ({ from: address, to: `r${i}@example.com`, subject: `limit ${i}`, body_text: 'x' })),
      { org: edge },
    )
    const results = res.body.data as { status: number; error?: { code: string } }[]
    expect(results.filter(r => r.status === 200).length).toBe(3)
    expect(results.filter(r => r.status === 429).map(r => r.error!.code)).toEqual(['rate_limited', 'rate_limited'])
    await relay.waitFor(before + 3)
    await Bun.sleep(100)
    expect(relay.messages.length).toBe(before + 3)
  })

  test('the batch itself: 1 to 100 messages, each an object', async () => {
    expectError(await batch([]), 400, 'validation_error', /^messages: /)
    const many = Array.from({ length: 101 }, () => ({ from, to: 'a@example.com', subject: 's', body_text: 'x' }))
    expectError(await batch(many), 400, 'validation_error', /^messages: must have at most 100 items/)
    expectError(await batch(['text']), 400, 'validation_error', /^messages\[0\]: /)
    expectError(await app.request('POST', '/v1/send-mail/batch', { body: { messages: [] } }), 401, 'unauthorized')
  })

  test('a connection key sends only as its address, message by message', async () => {
    const o = await createOrg()
    const bound = await managedAddress(app.ctx, o.orgId)
    const other = await managedAddress(app.ctx, o.orgId)
    const inv = (await app.request('POST', '/v1/agent-connections', { key: o.key, body: { address: bound } })).body.data
    const conn = (await app.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).body.data.connection_key
    const res = await app.request('POST', '/v1/send-mail/batch', {
      key: conn,
      body: {
        messages: [
          { from: bound, to: 'a@example.com', subject: `mine ${unique()}`, body_text: 'x' },
          { from: other, to: 'a@example.com', subject: 'not mine', body_text: 'x' },
        ],
      },
    })
    expect(res.status).toBe(200)
    expect(res.body.data.map((r: { status: number }) => r.status)).toEqual([200, 403])
  })
})
