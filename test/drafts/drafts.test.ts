/**
 * Drafts and approvals end to end: drafts sent to a real SMTP relay on loopback, an approval
 * policy turning send-mail into a draft pending approval, approval and rejection through the
 * API with who may decide, and the three events on a webhook receiver and in the changes feed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Stripe from 'stripe'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { relayOf } from '../../src/sending/relay'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { createApiKey } from '../../src/auth/api-keys'
import { addMember } from '../../src/account/membership-queries'
import { ensureUser } from '../../src/account/user-queries'
import { mcpClient, toolErrorOf } from '../mcp/helpers'
import { gqlData } from '../graphql/helpers'

let relay: TestRelay
let receiver: Receiver
let worker: Worker
let t: TestApp
let org: TestOrg
let from: string

const stripe = new Stripe('sk_test_unused')
const unique = () => crypto.randomUUID().slice(0, 8)

beforeAll(async () => {
  relay = await startTestRelay()
  receiver = startReceiver()
  t = await testApp({ SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000', WEBHOOK_ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '1,1' })
  worker = await startWorker(t.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  org = await createOrg()
  from = await managedAddress(t.ctx, org.orgId)
})
afterAll(async () => {
  await worker.stop(1000)
  await relayOf(t.ctx).close()
  await relay.stop()
  receiver.stop()
})

const message = (over: Record<string, unknown> = {}) => ({ from, to: 'alice@example.com', subject: `Draft ${unique()}`, body_text: 'Hello Alice', ...over })
const relayed = (subject: string) => relay.messages.filter(m => m.raw.includes(subject))

/** A key of a new person of `role` in `o`. */
async function keyOf(o: TestOrg, role: 'admin' | 'member' | null): Promise<string> {
  const sql = await testSql()
  return sql.begin(async tx => {
    const userId = role ? await ensureUser(tx, `${role}-${unique()}@example.test`) : null
    if (userId && role) await addMember(tx, o.orgId, userId, role)
    return (await createApiKey(tx, o.orgId, userId, `${role ?? 'no person'} key`)).key
  })
}

/**
 * A function's runtime key, made by hand as functions/service.ts makes it (the function is not
 * needed), with the owner as its creator: only its being a runtime key refuses it.
 */
async function runtimeKeyOf(o: TestOrg): Promise<string> {
  const sql = await testSql()
  return sql.begin(async tx => (await createApiKey(tx, o.orgId, o.userId, 'function runtime', crypto.randomUUID())).key)
}

/** An address of a new organization whose sends need approval. */
async function guardedSender() {
  const o = await createOrg()
  const address = await managedAddress(t.ctx, o.orgId)
  expectOk(await t.request('PUT', `/v1/approval-policies/${address}`, { key: o.key, body: { approval_required: true } }))
  return { o, address }
}

describe('drafts without a policy', () => {
  test('create, change, list and send: the relay receives it once, the draft names its send', async () => {
    const subject = `Draft ${unique()}`
    const created = expectOk(await t.request('POST', '/v1/drafts', { key: org.key, body: message({ subject: 'first words', cc: ['carol@example.com'] }) }), 201)
    expect(created).toMatchObject({ status: 'draft', from, to: ['alice@example.com'], cc: ['carol@example.com'], subject: 'first words', send_id: null })
    const changed = expectOk(await t.request('PATCH', `/v1/drafts/${created.id}`, { key: org.key, body: { subject, body_text: 'Hello again' } }))
    expect(changed).toMatchObject({ subject, body_text: 'Hello again', cc: ['carol@example.com'] })
    const listed = expectOk(await t.request('GET', '/v1/drafts?status=draft', { key: org.key }))
    expect(listed.map((d: { id: string }) => d.id)).toContain(created.id)
    expect(relayed(subject)).toHaveLength(0)

    const sent = expectOk(await t.request('POST', `/v1/drafts/${created.id}/send`, { key: org.key }))
    expect(sent.status).toBe('sent')
    expect(relayed(subject)).toHaveLength(1)
    expect(relayed(subject)[0]!.to.sort()).toEqual(['alice@example.com', 'carol@example.com'])
    expect(relayed(subject)[0]!.raw).toContain('Hello again')
    expect(expectOk(await t.request('GET', `/v1/sent-emails/${sent.send_id}`, { key: org.key }))).toMatchObject({ status: 'queued', subject })

    // sending again answers the draft as it is; it is no longer editable
    expect(expectOk(await t.request('POST', `/v1/drafts/${created.id}/send`, { key: org.key }))).toMatchObject({ status: 'sent', send_id: sent.send_id })
    expect(relayed(subject)).toHaveLength(1)
    const late = await t.request('PATCH', `/v1/drafts/${created.id}`, { key: org.key, body: { subject: 'late' } })
    expectError(late, 409, 'conflict', /^draft: is sent/)
    expect(late.body.error.details).toEqual({ status: 'sent', reason: 'draft_state' })
    expect(expectOk(await t.request('DELETE', `/v1/drafts/${created.id}`, { key: org.key }))).toEqual({ id: created.id, deleted: true })
    expectError(await t.request('GET', `/v1/drafts/${created.id}`, { key: org.key }), 404, 'not_found')
  })

  test('scheduled_at is kept and applies when it is sent', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString()
    const d = expectOk(await t.request('POST', '/v1/drafts', { key: org.key, body: message({ scheduled_at: at }) }), 201)
    expect(d.scheduled_at).toBe(at)
    const sent = expectOk(await t.request('POST', `/v1/drafts/${d.id}/send`, { key: org.key }))
    expect(expectOk(await t.request('GET', `/v1/sent-emails/${sent.send_id}`, { key: org.key }))).toMatchObject({ status: 'scheduled', scheduled_at: at })
  })

  test('validated as send-mail is: every bad input is the envelope naming the field', async () => {
    const bad = (body: unknown) => t.request('POST', '/v1/drafts', { key: org.key, body })
    expectError(await bad({ from, to: 'alice@example.com', body_text: 'x' }), 400, 'validation_error', /^subject: /)
    expectError(await bad(message({ to: 'not an address' })), 400, 'validation_error', /^to/)
    expectError(await bad(message({ scheduled_at: '2030-01-01T10:00:00' })), 400, 'validation_error', /^scheduled_at: /)
    expectError(await bad(message({ headers: { Bcc: 'x@example.com' } })), 400, 'validation_error', /^headers/)
    expectError(await bad(message({ from: 'someone@not-ours.example' })), 403, 'cannot_send_from_domain')
    expectError(await bad(message({ in_reply_to_email_id: crypto.randomUUID() })), 404, 'not_found')
    const d = expectOk(await bad(message()), 201)
    expectError(await t.request('PATCH', `/v1/drafts/${d.id}`, { key: org.key, body: {} }), 400, 'validation_error')
    expectError(
      await t.request('PATCH', `/v1/drafts/${d.id}`, { key: org.key, body: { subject: 'a\r\nBcc: x@example.com' } }),
      400,
      'validation_error',
      /^subject: /,
    )
    expectError(await t.request('GET', '/v1/drafts?status=lost', { key: org.key }), 400, 'validation_error', /^status: /)
  })

  test("another organization's draft is not found, whatever it does with it", async () => {
    const d = expectOk(await t.request('POST', '/v1/drafts', { key: org.key, body: message() }), 201)
    const other = await createOrg()
    for (const [method, path] of [
      ['GET', `/v1/drafts/${d.id}`],
      ['DELETE', `/v1/drafts/${d.id}`],
      ['POST', `/v1/drafts/${d.id}/send`],
      ['POST', `/v1/drafts/${d.id}/approve`],
      ['POST', `/v1/drafts/${d.id}/reject`],
      ['POST', `/v1/drafts/${d.id}/approval-link`],
    ] as const) {
      expectError(await t.request(method, path, { key: other.key }), 404, 'not_found')
    }
    expectError(await t.request('PATCH', `/v1/drafts/${d.id}`, { key: other.key, body: { subject: 'mine' } }), 404, 'not_found')
    expect(expectOk(await t.request('GET', '/v1/drafts', { key: other.key }))).toEqual([])
  })
})

describe('an approval policy', () => {
  test('only an owner or admin sets it, for a sender of the organization', async () => {
    const o = await createOrg()
    const address = await managedAddress(t.ctx, o.orgId)
    const member = await keyOf(o, 'member')
    expectError(await t.request('PUT', `/v1/approval-policies/${address}`, { key: member, body: { approval_required: true } }), 403, 'forbidden')
    expectError(await t.request('PUT', `/v1/approval-policies/${address}`, { key: await keyOf(o, null), body: { approval_required: true } }), 403, 'forbidden')
    expectError(
      await t.request('PUT', '/v1/approval-policies/someone@not-ours.example', { key: o.key, body: { approval_required: true } }),
      403,
      'cannot_send_from_domain',
    )
    expectError(await t.request('PUT', `/v1/approval-policies/${address}`, { key: o.key, body: {} }), 400, 'validation_error', /^approval_required: /)
    expectError(await t.request('GET', '/v1/approval-policies/not-an-address', { key: o.key }), 400, 'validation_error', /^address: /)
    const admin = await keyOf(o, 'admin')
    const set = expectOk(await t.request('PUT', `/v1/approval-policies/${address.toUpperCase()}`, { key: admin, body: { approval_required: true } }))
    expect(set).toMatchObject({ address, approval_required: true, notify_email: null })
    expect(expectOk(await t.request('GET', '/v1/approval-policies', { key: member })).map((p: { address: string }) => p.address)).toEqual([address])
    expect(expectOk(await t.request('GET', `/v1/approval-policies/${address}`, { key: member })).approval_required).toBe(true)
    expectOk(await t.request('PUT', `/v1/approval-policies/${address}`, { key: o.key, body: { approval_required: false } }))
    expect(expectOk(await t.request('GET', `/v1/approval-policies/${address}`, { key: o.key })).approval_required).toBe(false)
  })

  test('turns send-mail into a draft pending approval (202); a retry with the same key answers the same draft', async () => {
    const { o, address } = await guardedSender()
    const subject = `Held ${unique()}`
    const idem = `held-${unique()}`
    const body = { from: address, to: 'bob@example.com', subject, body_text: 'Needs a look' }
    const held = await t.request('POST', '/v1/send-mail', { key: o.key, body, headers: { 'idempotency-key': idem } })
    expect(held.status).toBe(202)
    expect(held.body.data).toMatchObject({ status: 'pending_approval', from: address, accepted: [], rejected: [], idempotent_replay: false })
    expect(held.body.data.draft_id).toBe(held.body.data.id)
    const again = await t.request('POST', '/v1/send-mail', { key: o.key, body, headers: { 'idempotency-key': idem } })
    expect(again.status).toBe(202)
    expect(again.body.data).toMatchObject({ id: held.body.data.id, idempotent_replay: true })
    expectError(
      await t.request('POST', '/v1/send-mail', { key: o.key, body: { ...body, subject: 'other' }, headers: { 'idempotency-key': idem } }),
      409,
      'conflict',
    )
    // without a key, the payload is the key
    const derived = await t.request('POST', '/v1/send-mail', { key: o.key, body: { ...body, subject: `${subject} 2` } })
    expect(derived.headers.get('idempotency-key')).toStartWith('held_')
    expect((await t.request('POST', '/v1/send-mail', { key: o.key, body: { ...body, subject: `${subject} 2` } })).body.data.id).toBe(derived.body.data.id)
    await Bun.sleep(200)
    expect(relayed(subject)).toHaveLength(0)
    expect(expectOk(await t.request('GET', `/v1/drafts/${held.body.data.id}`, { key: o.key }))).toMatchObject({ status: 'pending_approval', subject })
    // a send that would fail anyway is refused as it would be, not held
    expectError(
      await t.request('POST', '/v1/send-mail', { key: o.key, body: { from: address, to: 'bob@example.com', body_text: 'x' } }),
      400,
      'validation_error',
    )
    // a pending draft cannot change under its approver
    expectError(await t.request('PATCH', `/v1/drafts/${held.body.data.id}`, { key: o.key, body: { subject: 'swapped' } }), 409, 'conflict')
  })

  test('approved through the API, it is sent once, however often it is approved', async () => {
    const { o, address } = await guardedSender()
    const subject = `Approve me ${unique()}`
    const held = await t.request('POST', '/v1/send-mail', { key: o.key, body: { from: address, to: 'bob@example.com', subject, body_text: 'Please' } })
    const id = held.body.data.draft_id
    const admin = await keyOf(o, 'admin')
    const results = await Promise.all([
      t.request('POST', `/v1/drafts/${id}/approve`, { key: o.key }),
      t.request('POST', `/v1/drafts/${id}/approve`, { key: admin }),
    ])
    // one approval sends; the other finds it sent, or its send in progress (409 of the same key)
    expect(results.some(r => r.status === 200 && r.body.data.status === 'sent')).toBe(true)
    for (const r of results) expect([200, 409]).toContain(r.status)
    const again = expectOk(await t.request('POST', `/v1/drafts/${id}/approve`, { key: o.key }))
    expect(again).toMatchObject({ status: 'sent', decided_by: { via: 'api' } })
    expect(expectOk(await t.request('GET', `/v1/sent-emails/${again.send_id}`, { key: o.key }))).toMatchObject({ status: 'queued', subject })
    await Bun.sleep(200)
    expect(relayed(subject)).toHaveLength(1)
    expectError(await t.request('POST', `/v1/drafts/${id}/reject`, { key: o.key, body: { reason: 'too late' } }), 409, 'conflict', /^draft: is sent/)
  })

  test('rejected, it keeps the reason and is never sent', async () => {
    const { o, address } = await guardedSender()
    const subject = `Reject me ${unique()}`
    const held = await t.request('POST', '/v1/send-mail', { key: o.key, body: { from: address, to: 'bob@example.com', subject, body_text: 'Hmm' } })
    const id = held.body.data.draft_id
    expectError(await t.request('POST', `/v1/drafts/${id}/reject`, { key: o.key, body: { reason: '' } }), 400, 'validation_error', /^reason: /)
    const rejected = expectOk(await t.request('POST', `/v1/drafts/${id}/reject`, { key: o.key, body: { reason: 'wrong tone' } }))
    expect(rejected).toMatchObject({ status: 'rejected', rejection_reason: 'wrong tone', decided_by: { via: 'api', user_id: o.userId } })
    expectError(await t.request('POST', `/v1/drafts/${id}/approve`, { key: o.key }), 409, 'conflict', /^draft: is rejected/)
    expectError(await t.request('POST', `/v1/drafts/${id}/send`, { key: o.key }), 409, 'conflict')
    expect(expectOk(await t.request('GET', `/v1/drafts/${id}`, { key: o.key })).rejection_reason).toBe('wrong tone')
    expect(relayed(subject)).toHaveLength(0)
  })

  test("a draft's send waits too; an agent's connection key sees its drafts but cannot approve them, nor can a member or a key without a person", async () => {
    const { o, address } = await guardedSender()
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: o.key, body: { address } }), 201)
    const conn = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    const subject = `Agent ${unique()}`
    const d = expectOk(
      await t.request('POST', '/v1/drafts', { key: conn, body: { from: address, to: 'bob@example.com', subject, body_text: 'From the agent' } }),
      201,
    )
    const waiting = await t.request('POST', `/v1/drafts/${d.id}/send`, { key: conn })
    expect(waiting.status).toBe(202)
    expect(waiting.body.data.status).toBe('pending_approval')
    expect(expectOk(await t.request('GET', '/v1/drafts?status=pending_approval', { key: conn })).map((x: { id: string }) => x.id)).toEqual([d.id])
    const runtime = await runtimeKeyOf(o)
    expectError(await t.request('POST', `/v1/drafts/${d.id}/approve`, { key: runtime }), 403, 'forbidden', /^function runtime key: /)
    expectError(await t.request('POST', `/v1/drafts/${d.id}/approve`, { key: conn }), 403, 'forbidden', /^connection key: /)
    for (const key of [conn, runtime, await keyOf(o, 'member'), await keyOf(o, null)]) {
      expectError(await t.request('POST', `/v1/drafts/${d.id}/approve`, { key }), 403, 'forbidden')
      expectError(await t.request('POST', `/v1/drafts/${d.id}/reject`, { key }), 403, 'forbidden')
      expectError(await t.request('POST', `/v1/drafts/${d.id}/approval-link`, { key }), 403, 'forbidden')
    }
    expectError(await t.request('PUT', `/v1/approval-policies/${address}`, { key: conn, body: { approval_required: false } }), 403, 'forbidden')
    // a connection key drafts only as its address
    expectError(await t.request('POST', '/v1/drafts', { key: conn, body: message() }), 403, 'forbidden', /^from: /)
    const ownDraft = expectOk(
      await t.request('POST', '/v1/drafts', {
        key: o.key,
        body: { from: await managedAddress(t.ctx, o.orgId), to: 'x@example.com', subject: 's', body_text: 'b' },
      }),
      201,
    )
    expectError(await t.request('GET', `/v1/drafts/${ownDraft.id}`, { key: conn }), 404, 'not_found')
    expect(expectOk(await t.request('POST', `/v1/drafts/${d.id}/approve`, { key: o.key })).status).toBe('sent')
    expect(relayed(subject)).toHaveLength(1)
  })

  test('the three events reach a webhook receiver on loopback, signed, and the changes feed', async () => {
    const { o, address } = await guardedSender()
    const hook = `/drafts-${unique()}`
    expectOk(
      await t.request('POST', '/v1/endpoints', {
        key: o.key,
        body: { url: receiver.url(hook), rules: { event_types: ['draft.pending_approval', 'draft.approved', 'draft.rejected'] } },
      }),
      201,
    )
    const cursor = expectOk(await t.request('GET', '/v1/changes/cursor', { key: o.key })).cursor
    const send = (subject: string) =>
      t.request('POST', '/v1/send-mail', { key: o.key, body: { from: address, to: 'bob@example.com', subject, body_text: 'x' } })
    const first = (await send(`Events one ${unique()}`)).body.data.draft_id
    const second = (await send(`Events two ${unique()}`)).body.data.draft_id
    expectOk(await t.request('POST', `/v1/drafts/${first}/approve`, { key: o.key }))
    expectOk(await t.request('POST', `/v1/drafts/${second}/reject`, { key: o.key, body: { reason: 'no' } }))
    const received = await receiver.waitFor(4, hook)
    const secret = expectOk(await t.request('GET', '/v1/account/webhook-secret', { key: o.key })).secret
    const events = await Promise.all(
      received.map(r => stripe.webhooks.constructEventAsync(r.body, r.headers['service-signature']!, secret, 300) as Promise<any>),
    )
    const seen = events.map(e => [e.type, e.draft.id, e.draft.status]).sort()
    expect(seen).toEqual(
      [
        ['draft.approved', first, 'sending'],
        ['draft.pending_approval', first, 'pending_approval'],
        ['draft.pending_approval', second, 'pending_approval'],
        ['draft.rejected', second, 'rejected'],
      ].sort(),
    )
    expect(events.find(e => e.type === 'draft.rejected').draft.rejection_reason).toBe('no')
    const changes = expectOk(await t.request('GET', `/v1/changes?cursor=${encodeURIComponent(cursor)}&types=draft.*`, { key: o.key }))
    expect(changes.map((c: any) => [c.type, c.resource.id])).toEqual([
      ['draft.pending_approval', first],
      ['draft.pending_approval', second],
      ['draft.approved', first],
      ['draft.rejected', second],
    ])
    // the feed's change and the webhook's event are one event
    expect(new Set(changes.map((c: any) => c.id))).toEqual(new Set(events.map(e => e.id)))
  })
})

describe('the other surfaces', () => {
  test('the OpenAPI document lists the operations, and the 202 of a held send', async () => {
    const paths = (await t.request('GET', '/v1/openapi')).body.paths
    for (const path of [
      '/v1/drafts',
      '/v1/drafts/{id}',
      '/v1/drafts/{id}/send',
      '/v1/drafts/{id}/approve',
      '/v1/drafts/{id}/reject',
      '/v1/approval-policies/{address}',
    ])
      expect(paths[path]).toBeDefined()
    for (const path of ['/v1/send-mail', '/v1/drafts/{id}/send']) {
      expect(paths[path].post.responses['202'].description).toStartWith('accepted')
      expect(paths[path].post.description).toContain('pending_approval')
    }
    expect(paths['/drafts/approval'].post.requestBody.content['application/x-www-form-urlencoded'].schema.required).toEqual(['token', 'csrf_token', 'action'])
  })

  test('MCP: an agent held by a policy drafts and sends, sees pending_approval, and is not offered approval; an owner decides; GraphQL lists what waits', async () => {
    const { o, address } = await guardedSender()
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: o.key, body: { address } }), 201)
    const conn = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    const agent = await mcpClient(t, conn, 'modern')
    try {
      const subject = `Tool ${unique()}`
      const sent = (await agent.callTool({
        name: 'send_email',
        arguments: { from: address, to: 'bob@example.com', subject, body_text: 'via MCP', idempotency_key: unique() },
      })) as { structuredContent: any }
      expect(sent.structuredContent).toMatchObject({ status: 'pending_approval' })
      const draftId = sent.structuredContent.draft_id
      const got = (await agent.callTool({ name: 'get_draft', arguments: { draft_id: draftId } })) as { structuredContent: any }
      expect(got.structuredContent).toMatchObject({ id: draftId, status: 'pending_approval', subject })
      // the agent's key is not offered the tools of approval at all
      const tools = (await agent.listTools()).tools.map(tool => tool.name)
      expect(tools).toEqual(expect.arrayContaining(['create_draft', 'send_draft', 'get_draft', 'list_drafts']))
      expect(tools.filter(name => /approve|reject|approval/.test(name))).toEqual([])
      const data = await gqlData(t, 'query { drafts(status: "pending_approval") { edges { node { id status subject to } } } }', { key: o.key })
      expect(data.drafts.edges.map((e: any) => e.node)).toEqual([{ id: draftId, status: 'pending_approval', subject, to: ['bob@example.com'] }])
      expect((await gqlData(t, `query { draft(id: "${draftId}") { id decidedBy } }`, { key: o.key })).draft).toEqual({ id: draftId, decidedBy: null })
      const owner = await mcpClient(t, o.key, 'modern')
      try {
        const rejected = (await owner.callTool({ name: 'reject_draft', arguments: { draft_id: draftId, reason: 'not today' } })) as { structuredContent: any }
        expect(rejected.structuredContent).toMatchObject({ status: 'rejected', rejection_reason: 'not today' })
        expect(toolErrorOf(await owner.callTool({ name: 'approve_draft', arguments: { draft_id: draftId } })).code).toBe('conflict')
      } finally {
        await owner.close()
      }
    } finally {
      await agent.close()
    }
  })
})
