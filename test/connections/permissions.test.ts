/**
 * What an agent connection key (conn_) may do (Authentication rule 2): read the mail of its
 * bound address, send as that address, disconnect itself. Everything else, every operation of
 * the OpenAPI document included, is 403 forbidden: the allow-list denies by default.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress, rfc822 } from '../helpers/mail'
import { memoryResolver } from '../../src/dns/resolver'
import { NO_VERDICTS } from '../../src/mail/inbound/authenticate'
import { ingest } from '../../src/mail/inbound/ingest'
import { parseMail } from '../../src/mail/inbound/parse'
import { storeEmail } from '../../src/mail/store'
import { CONNECTION_KEY_ROUTES } from '../../src/http/credential-scope'
import { unique } from '../helpers/identity'

let t: TestApp
let org: TestOrg
let bound: string
let sibling: string
let key: string
const ids: Record<string, string> = {}

async function inbound(rcptTo: string[], subject: string): Promise<string> {
  const raw = new TextEncoder().encode(
    rfc822({ From: 'Sam <sam@sender.example>', To: rcptTo.join(', '), Subject: subject, 'Message-ID': `<${unique()}@sender.example>` }, 'hello'),
  )
  const result = await ingest(t.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo, remoteIp: '192.0.2.1', helo: 'sender.example', tls: false })
  return result.stored.find(s => s.orgId === org.orgId)!.id
}

/** Sent mail as the sending job stores it. */
async function outbound(from: string, subject: string): Promise<string> {
  const text = rfc822({ From: from, To: 'someone@example.com', Subject: subject, 'Message-ID': `<${unique()}@agents.test.local>` }, 'sent')
  const raw = new TextEncoder().encode(text)
  const mail = await parseMail(raw)
  const sql = await testSql()
  const stored = await sql.begin(tx =>
    storeEmail(t.ctx, tx, {
      orgId: org.orgId,
      direction: 'outbound',
      eventType: 'email.received',
      mail,
      raw,
      mailFrom: from,
      rcptTo: ['someone@example.com'],
      auth: NO_VERDICTS,
    }),
  )
  return stored.id
}

beforeAll(async () => {
  // inbound authentication reads DNS: an empty in-memory zone keeps the test off the network
  t = await testApp({}, { resolver: memoryResolver({}) })
  org = await createOrg()
  bound = await managedAddress(t.ctx, org.orgId)
  sibling = await managedAddress(t.ctx, org.orgId)
  const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address: bound } }), 201)
  key = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
  ids.toBound = await inbound([bound], 'to the bound address')
  ids.toSibling = await inbound([sibling], 'to the sibling')
  ids.toBoth = await inbound([sibling, bound.toUpperCase()], 'to both')
  ids.fromBound = await outbound(bound, 'from the bound address')
  ids.fromSibling = await outbound(sibling, 'from the sibling')
})

describe('allowed: mail reads of the bound address', () => {
  test('GET /v1/emails lists only mail to or from the bound address', async () => {
    const listed = expectOk(await t.request('GET', '/v1/emails', { key })).map((e: { id: string }) => e.id)
    expect(listed.sort()).toEqual([ids.toBound, ids.toBoth, ids.fromBound].sort())
    const res = await t.request('GET', '/v1/emails', { key })
    expect(res.body.meta.total).toBe(3)
    // filters narrow within the address, never widen
    const inboundOnly = expectOk(await t.request('GET', '/v1/emails?direction=inbound', { key })).map((e: { id: string }) => e.id)
    expect(inboundOnly.sort()).toEqual([ids.toBound, ids.toBoth].sort())
    // the organization's own key still sees everything
    const all = expectOk(await t.request('GET', '/v1/emails', { key: org.key })).map((e: { id: string }) => e.id)
    for (const id of Object.values(ids)) expect(all).toContain(id)
  })

  test("GET /v1/emails/{id}: the bound address's mail is 200, other mail of the organization 404", async () => {
    for (const id of [ids.toBound, ids.toBoth, ids.fromBound]) expect(expectOk(await t.request('GET', `/v1/emails/${id}`, { key })).id).toBe(id)
    expectError(await t.request('GET', `/v1/emails/${ids.toSibling}`, { key }), 404, 'not_found')
    expectError(await t.request('GET', `/v1/emails/${ids.fromSibling}`, { key }), 404, 'not_found')
    expectOk(await t.request('GET', `/v1/emails/${ids.toSibling}`, { key: org.key }))
  })

  test("another organization's mail stays 404", async () => {
    const other = await createOrg()
    const otherAddress = await managedAddress(t.ctx, other.orgId)
    const raw = new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: otherAddress, Subject: 'elsewhere' }, 'x'))
    const result = await ingest(t.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo: [otherAddress], remoteIp: '192.0.2.1', tls: false })
    expectError(await t.request('GET', `/v1/emails/${result.stored[0]!.id}`, { key }), 404, 'not_found')
  })
})

describe('sending', () => {
  test('a connection key sends as its bound address, and then reads that sent mail', async () => {
    const subject = `hi ${unique()}`
    const sent = expectOk(await t.request('POST', '/v1/send-mail', { key, body: { from: bound, to: 'someone@example.com', subject, body_text: 'hello' } }))
    expect(sent).toMatchObject({ status: 'queued', from: bound })
    const listed = expectOk(await t.request('GET', '/v1/emails?direction=outbound', { key }))
    expect(listed.map((e: { subject: string }) => e.subject)).toContain(subject)
  })

  test('a connection key replies only to mail of its bound address: other mail of the organization is 404', async () => {
    const reply = (email: string) =>
      t.request('POST', '/v1/send-mail', { key, body: { from: bound, in_reply_to_email_id: email, subject: `re ${unique()}`, body_text: 'thanks' } })
    expect(expectOk(await reply(ids.toBound!))).toMatchObject({ status: 'queued', from: bound })
    expect(expectOk(await reply(ids.toBoth!))).toMatchObject({ status: 'queued', from: bound })
    expectError(await reply(ids.toSibling!), 404, 'not_found')
  })

  test('a connection key cannot send as another address of its organization (403)', async () => {
    const res = await t.request('POST', '/v1/send-mail', {
      key,
      body: { from: sibling, to: 'someone@example.com', subject: `hi ${unique()}`, body_text: 'hello' },
    })
    expect(res.status).toBe(403)
    expect(['forbidden', 'cannot_send_from_domain']).toContain(res.body.error.code)
  })
})

describe('forbidden: everything else', () => {
  test('account, identity, threads, search, raw downloads, other connection management: 403 forbidden', async () => {
    const email = ids.toBound
    const cases: [string, string, unknown?][] = [
      ['GET', '/v1/whoami'],
      ['GET', '/v1/me'],
      ['GET', '/v1/account'],
      ['GET', '/v1/account/storage'],
      ['GET', '/v1/account/webhook-secret'],
      ['GET', '/v1/threads'],
      ['GET', `/v1/threads/${crypto.randomUUID()}`],
      ['GET', '/v1/search?q=hello'],
      ['GET', `/v1/emails/${email}/raw`],
      ['GET', `/v1/emails/${email}/attachments.tar.gz`],
      ['POST', `/v1/emails/${email}/discard`],
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/api-keys', { name: 'escalate' }],
      ['GET', '/v1/inboxes'],
      ['POST', '/v1/agent-connections', { address: bound }],
      ['POST', '/v1/agent-connections', { address: sibling }],
      ['DELETE', `/v1/agent-connections/${encodeURIComponent(sibling)}`],
      ['GET', '/v1/emails/'],
    ]
    for (const [method, path, body] of cases) {
      const res = await t.request(method, path, { key, body })
      expect({ op: `${method} ${path}`, status: res.status, code: res.body?.error?.code }).toEqual({ op: `${method} ${path}`, status: 403, code: 'forbidden' })
    }
    // and nothing was created on the way
    const keys = expectOk(await t.request('GET', '/v1/api-keys', { key: org.key }))
    expect(keys.map((k: { name: string }) => k.name)).not.toContain('escalate')
  })

  test('every operation of the OpenAPI document outside the allow-list answers 403 forbidden', async () => {
    const doc = (await t.request('GET', '/v1/openapi')).body
    const allowed = new Set(CONNECTION_KEY_ROUTES.map(r => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, '{$1}')}`))
    const checked: string[] = []
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[] }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (Array.isArray(op.security) && op.security.length === 0) continue
        if (allowed.has(`${method} ${path}`)) continue
        // GraphQL applies the allow-list field by field, to the REST read each field mirrors (test/graphql/access.test.ts)
        if (path === '/graphql') continue
        const url = path.replace(/\{[^}]+\}/g, () => crypto.randomUUID())
        const res = await t.request(method.toUpperCase(), url, { key, body: ['post', 'put', 'patch'].includes(method) ? {} : undefined })
        checked.push(`${method} ${path}`)
        expect({ op: `${method} ${path}`, status: res.status, code: res.body?.error?.code }).toEqual({
          op: `${method} ${path}`,
          status: 403,
          code: 'forbidden',
        })
      }
    }
    expect(checked.length).toBeGreaterThanOrEqual(30)
    expect(checked).toContain('get /v1/whoami')
  })

  test('the allow-list is exactly mail reads, labels of its mail, send-mail, drafts of the bound address (never their approval), the changes of the bound address (read or streamed), self-disconnect, network discovery and admission, contact reads, and address notes', () => {
    expect(CONNECTION_KEY_ROUTES.map(r => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/emails',
      'GET /v1/emails/:id',
      'POST /v1/emails/:id/labels',
      'POST /v1/emails/labels',
      'GET /v1/labels',
      'POST /v1/send-mail',
      'POST /v1/send-mail/batch',
      'POST /v1/emails/:id/forward',
      'GET /v1/drafts',
      'POST /v1/drafts',
      'GET /v1/drafts/:id',
      'PATCH /v1/drafts/:id',
      'DELETE /v1/drafts/:id',
      'POST /v1/drafts/:id/send',
      'GET /v1/changes',
      'GET /v1/changes/cursor',
      'GET /v1/events/stream',
      'DELETE /v1/agent-connections/:address',
      'GET /v1/networks',
      'GET /v1/networks/:id/agents',
      'POST /v1/networks/:id/agents/:agent_id/admit',
      'GET /v1/contacts',
      'GET /v1/contacts/:id',
      'GET /v1/address-notes',
      'GET /v1/address-notes/:id',
      'POST /v1/address-notes',
      'PATCH /v1/address-notes/:id',
      'DELETE /v1/address-notes/:id',
    ])
  })

  test('contacts: it reads those of its bound address only, and changes none', async () => {
    const own = expectOk(await t.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: bound, address: `own-${unique()}@example.com` } }), 201)
    const others = expectOk(
      await t.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: sibling, address: `other-${unique()}@example.com` } }),
      201,
    )
    const listed = await t.request('GET', '/v1/contacts', { key })
    expect(expectOk(listed).map((c: { id: string }) => c.id)).toEqual([own.id])
    expect(listed.body.meta.total).toBe(1)
    // asking for the sibling's contacts narrows within the bound address: nothing
    expect(expectOk(await t.request('GET', `/v1/contacts?owner_address=${encodeURIComponent(sibling)}`, { key }))).toEqual([])
    expect(expectOk(await t.request('GET', `/v1/contacts/${own.id}`, { key })).owner_address).toBe(bound)
    expectError(await t.request('GET', `/v1/contacts/${others.id}`, { key }), 404, 'not_found')
    expectError(await t.request('PATCH', `/v1/contacts/${own.id}`, { key, body: { name: 'renamed' } }), 403, 'forbidden')
    expectError(await t.request('DELETE', `/v1/contacts/${own.id}`, { key }), 403, 'forbidden')
    expectError(await t.request('POST', '/v1/contacts', { key, body: { owner_address: bound, address: `new-${unique()}@example.com` } }), 403, 'forbidden')
    // the organization's key still reads both
    expect(expectOk(await t.request('GET', `/v1/contacts/${others.id}`, { key: org.key })).id).toBe(others.id)
  })

  test('a revoked connection key is 401 everywhere, allowed routes included', async () => {
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address: sibling } }), 201)
    const other = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    expectOk(await t.request('DELETE', `/v1/agent-connections/${encodeURIComponent(sibling)}`, { key: org.key }))
    expectError(await t.request('GET', '/v1/emails', { key: other }), 401, 'unauthorized')
    expectError(await t.request('GET', '/v1/whoami', { key: other }), 401, 'unauthorized')
  })
})
