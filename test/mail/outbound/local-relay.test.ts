/**
 * The embedded relay: hosted recipients get the message through the inbound pipeline (DKIM
 * verified against our own keys), everyone else's copy lands in the local outbox, readable
 * through GET /v1/outbound/outbox.
 */
import { describe, expect, test } from 'bun:test'
import { memoryResolver } from '../../../src/dns/resolver'
import { markDomainVerified } from '../../../src/domains/service'
import { buildMime } from '../../../src/mail/outbound/build'
import { dkimSign, signingKeyFor } from '../../../src/mail/outbound/dkim'
import { createRelay, RelayError } from '../../../src/mail/outbound/relay'
import type { RelayEnvelope } from '../../../src/mail/outbound/relay-types'
import { createOrg, testApp, testSql } from '../../helpers/app'
import { managedAddress } from '../../helpers/mail'
import { fullMessage } from './message'

const t = await testApp({}, { resolver: memoryResolver({}) })
const { ctx, request } = t
const managed = ctx.config.MANAGED_DOMAIN
const relay = createRelay(ctx)
const unique = (label: string) => `${label}-${crypto.randomUUID().slice(0, 8)}`

/** Builds and signs a message as the organization would send it, and hands it to the relay. */
async function send(orgId: string, from: string, to: string[], overrides = {}) {
  const m = fullMessage(from, { to, cc: [], bcc: [], ...overrides })
  const key = await signingKeyFor(ctx, orgId, from.split('@')[1]!)
  const raw = key ? await dkimSign(buildMime(m), key) : buildMime(m)
  const envelope: RelayEnvelope = { from, to, orgId }
  return { m, raw, result: await relay.send(envelope, raw) }
}

async function onlyEmail(key: string) {
  const list = await request('GET', '/v1/emails', { key })
  expect(list.status).toBe(200)
  expect(list.body.data).toHaveLength(1)
  return (await request('GET', `/v1/emails/${list.body.data[0].id}`, { key })).body.data
}

test('without SMTP_RELAY_URL the relay is local', () => {
  expect(relay.kind).toBe('local')
})

describe('recipients hosted here', () => {
  test("a message to another organization's managed inbox arrives there, DKIM pass for the managed domain", async () => {
    const a = await createOrg()
    const b = await createOrg()
    const from = await managedAddress(ctx, a.orgId)
    const to = await managedAddress(ctx, b.orgId)
    const { m, result } = await send(a.orgId, from, [to])
    expect(result).toMatchObject({ accepted: [to], rejected: [] })
    expect(result.response).toStartWith('250')

    const email = await onlyEmail(b.key)
    expect(email.subject).toBe(m.subject)
    expect(email.from).toEqual({ address: from, name: 'Support Agent' })
    expect(email.message_id).toBe(m.messageId)
    expect(email.attachment_count).toBe(3)
    expect(email.envelope).toMatchObject({ mail_from: from, rcpt_to: [to], remote_ip: '127.0.0.1', helo: ctx.config.SMTP_HOSTNAME })
    expect(email.authentication.dkim).toHaveLength(1)
    expect(email.authentication.dkim[0]).toMatchObject({ result: 'pass', domain: managed, aligned: true })
    expect(email.authentication.dkim[0].signed_headers).toEqual(expect.arrayContaining(['from', 'to', 'subject', 'content-type']))
    // the sender's organization stores nothing: it is not a recipient
    expect((await request('GET', '/v1/emails', { key: a.key })).body.data).toHaveLength(0)
  })

  test("mail from a verified domain is verified against that domain's key from the database", async () => {
    const a = await createOrg()
    const b = await createOrg()
    const domain = `${unique('send')}.example.com`
    await markDomainVerified(await testSql(), ctx.keys, managed, a.orgId, domain)
    const to = await managedAddress(ctx, b.orgId)
    await send(a.orgId, `news@${domain}`, [to])
    const email = await onlyEmail(b.key)
    expect(email.authentication.dkim[0]).toMatchObject({ result: 'pass', domain })
  })

  test('any address at a verified domain is hosted here', async () => {
    const a = await createOrg()
    const c = await createOrg()
    const domain = `${unique('recv')}.example.com`
    await markDomainVerified(await testSql(), ctx.keys, managed, c.orgId, domain)
    const { result } = await send(a.orgId, await managedAddress(ctx, a.orgId), [`anyone@${domain}`])
    expect(result.accepted).toEqual([`anyone@${domain}`])
    await onlyEmail(c.key)
    expect((await request('GET', '/v1/outbound/outbox', { key: a.key })).body.data).toHaveLength(0)
  })

  test('an unsigned message arrives unauthenticated (DKIM none)', async () => {
    const a = await createOrg()
    const b = await createOrg()
    const from = `someone@${unique('unverified')}.example.com`
    const to = await managedAddress(ctx, b.orgId)
    await send(a.orgId, from, [to])
    const email = await onlyEmail(b.key)
    expect(email.authentication.dkim.map((d: { result: string }) => d.result)).toEqual(['none'])
  })
})

describe('refused recipients', () => {
  test('a managed address without an inbox is rejected, the others still get the message', async () => {
    const a = await createOrg()
    const b = await createOrg()
    const to = await managedAddress(ctx, b.orgId)
    const nobody = `${unique('nobody')}@${managed}`
    const { result } = await send(a.orgId, await managedAddress(ctx, a.orgId), [to, nobody, 'outside@example.com'])
    expect(result.accepted).toEqual([to, 'outside@example.com'])
    expect(result.rejected).toEqual([nobody])
    // the reply our listener gives it, which makes it a hard bounce of the send
    expect(result.refusals).toEqual([{ address: nobody, reply: `550 5.1.1 <${nobody}>: no such mailbox here` }])
  })

  test('through the API: the missing inbox is a hard bounce of the send, and suppressed', async () => {
    const a = await createOrg()
    const nobody = `${unique('nobody')}@${managed}`
    const from = await managedAddress(ctx, a.orgId)
    const sent = await request('POST', '/v1/send-mail', { key: a.key, body: { from, to: [nobody, 'outside@example.com'], subject: 'Hi', body_text: 'Hi.' } })
    expect(sent.status).toBe(200)
    const state = await request('GET', `/v1/sent-emails/${sent.body.data.id}`, { key: a.key })
    expect(state.body.data.recipients).toMatchObject([
      { address: nobody, status: 'bounced', bounce_type: 'hard', status_code: '5.1.1' },
      { address: 'outside@example.com', status: 'accepted' },
    ])
    expect((await request('GET', '/v1/suppressions', { key: a.key })).body.data).toMatchObject([{ address: nobody, reason: 'hard_bounce' }])
  })

  test('only unknown managed addresses: outbound_relay_failed, nothing sent', async () => {
    const a = await createOrg()
    const error = await send(a.orgId, await managedAddress(ctx, a.orgId), [`${unique('nobody')}@${managed}`]).catch(e => e)
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toMatchObject({ code: 'outbound_relay_failed', maybeSent: false, refusals: [{ reply: expect.stringMatching(/^550 5\.1\.1 /) }] })
  })

  test('a recipient organization whose storage is full: outbound_capacity_exhausted', async () => {
    const a = await createOrg()
    const full = await createOrg({ plan: 'free' })
    const sql = await testSql()
    await sql`update orgs set storage_used_bytes = 1000000000000 where id = ${full.orgId}`
    const error = await send(a.orgId, await managedAddress(ctx, a.orgId), [await managedAddress(ctx, full.orgId)]).catch(e => e)
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toMatchObject({ code: 'outbound_capacity_exhausted', maybeSent: false })
  })
})

describe('the local outbox', () => {
  test('a message to an outside address lands in the outbox, readable through the endpoints', async () => {
    const a = await createOrg()
    const from = await managedAddress(ctx, a.orgId)
    const { m, raw, result } = await send(a.orgId, from, ['alice@example.com', 'bob@example.net'])
    expect(result).toMatchObject({ accepted: ['alice@example.com', 'bob@example.net'], rejected: [] })

    const list = await request('GET', '/v1/outbound/outbox', { key: a.key })
    expect(list.status).toBe(200)
    expect(list.body.meta).toMatchObject({ total: 2, cursor: null })
    expect(list.body.data.map((r: { rcpt: string }) => r.rcpt).sort()).toEqual(['alice@example.com', 'bob@example.net'])
    const item = list.body.data[0]
    expect(item).toMatchObject({ envelope_from: from, subject: m.subject, message_id: m.messageId })
    expect(Object.keys(item).sort()).toEqual(['created_at', 'envelope_from', 'id', 'message_id', 'rcpt', 'subject'])
    expect(item.created_at).toMatch(/Z$/)

    const one = await request('GET', `/v1/outbound/outbox/${item.id}`, { key: a.key })
    expect(one.status).toBe(200)
    expect(one.body.data.raw).toBe(raw)
    expect(one.body.data.id).toBe(item.id)
  })

  test("another organization's outbox message is not_found and never listed", async () => {
    const a = await createOrg()
    const other = await createOrg()
    await send(a.orgId, await managedAddress(ctx, a.orgId), ['private@example.com'])
    const [item] = (await request('GET', '/v1/outbound/outbox', { key: a.key })).body.data
    expect((await request('GET', `/v1/outbound/outbox/${item.id}`, { key: other.key })).status).toBe(404)
    expect((await request('GET', `/v1/outbound/outbox/${item.id}`, { key: other.key })).body.error.code).toBe('not_found')
    expect((await request('GET', '/v1/outbound/outbox', { key: other.key })).body.data).toEqual([])
  })

  test('newest first, paginated with a cursor', async () => {
    const a = await createOrg()
    const from = await managedAddress(ctx, a.orgId)
    for (const n of [1, 2, 3]) await send(a.orgId, from, [`r${n}@example.com`], { subject: `message ${n}` })
    const first = await request('GET', '/v1/outbound/outbox?limit=2', { key: a.key })
    expect(first.body.data.map((r: { subject: string }) => r.subject)).toEqual(['message 3', 'message 2'])
    expect(first.body.meta).toMatchObject({ total: 3, limit: 2 })
    const second = await request('GET', `/v1/outbound/outbox?limit=2&cursor=${encodeURIComponent(first.body.meta.cursor)}`, { key: a.key })
    expect(second.body.data.map((r: { subject: string }) => r.subject)).toEqual(['message 1'])
    expect(second.body.meta.cursor).toBeNull()
  })

  test('mail the service sends on its own behalf (no organization) is kept but listed to no one', async () => {
    const a = await createOrg()
    const rcpt = `${unique('system')}@example.com`
    await relay.send({ from: `noreply@${managed}`, to: [rcpt], orgId: null }, buildMime(fullMessage(`noreply@${managed}`, { to: [rcpt], cc: [], bcc: [] })))
    const sql = await testSql()
    const rows = await sql`select org_id from outbox_messages where rcpt = ${rcpt}`
    expect([...rows]).toEqual([{ org_id: null }])
    expect((await request('GET', '/v1/outbound/outbox', { key: a.key })).body.data).toEqual([])
  })

  test('authentication is required', async () => {
    const res = await request('GET', '/v1/outbound/outbox')
    expect(res.status).toBe(401)
    expect(res.body.error.code).toBe('unauthorized')
  })

  test('a malformed id is validation_error; an unknown one not_found', async () => {
    const a = await createOrg()
    expect((await request('GET', '/v1/outbound/outbox/nope', { key: a.key })).body.error.code).toBe('validation_error')
    expect((await request('GET', `/v1/outbound/outbox/${crypto.randomUUID()}`, { key: a.key })).status).toBe(404)
  })
})
