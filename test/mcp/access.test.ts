/**
 * Who may use /mcp and how: bearer credentials only (never the query string), the 401 challenge
 * pointing at the protected-resource metadata, the Origin check, and connection keys confined
 * to the tools and mail of their address, as on the REST API.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { managedAddress, rfc822 } from '../helpers/mail'
import { memoryResolver } from '../../src/dns/resolver'
import { ingest } from '../../src/mail/inbound/ingest'
import { appFetch, ERAS, mcpClient, toolErrorOf } from './helpers'

let t: TestApp
let org: TestOrg
const unique = () => crypto.randomUUID().slice(0, 8)
const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
}

function post(headers: Record<string, string>, body: unknown = initialize, path = '/mcp') {
  return appFetch(t)(`http://api.test.local${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

beforeAll(async () => {
  t = await testApp({}, { resolver: memoryResolver({}) })
  org = await createOrg()
})

describe('authentication', () => {
  test('no bearer: 401 with WWW-Authenticate naming the MCP resource metadata, which describes /mcp', async () => {
    const res = await post({})
    expect(res.status).toBe(401)
    const challenge = res.headers.get('www-authenticate')!
    expect(challenge).toStartWith('Bearer ')
    const url = /resource_metadata="([^"]+)"/.exec(challenge)![1]!
    expect(url).toBe('http://api.test.local/.well-known/oauth-protected-resource/mcp')
    const metadata = (await (await appFetch(t)(url)).json()) as Record<string, unknown>
    expect(metadata).toMatchObject({
      resource: 'http://api.test.local/mcp',
      authorization_servers: ['http://api.test.local'],
      bearer_methods_supported: ['header'],
    })
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized')
  })

  test('an unknown key is 401; a key in the query string is never read', async () => {
    expect((await post({ authorization: 'Bearer svc_nope' })).status).toBe(401)
    expect((await post({}, initialize, `/mcp?access_token=${org.key}`)).status).toBe(401)
    expect((await post({}, initialize, `/mcp?api_key=${org.key}`)).status).toBe(401)
  })

  test('an API key is served; a body that is not JSON is a JSON-RPC parse error', async () => {
    const res = await post({ authorization: `Bearer ${org.key}` })
    expect(res.status).toBe(200)
    const bad = await post({ authorization: `Bearer ${org.key}` }, '{"jsonrpc":')
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700)
  })

  test("Origin: the service's own is accepted, any other is 403 before the credential is looked at", async () => {
    expect((await post({ authorization: `Bearer ${org.key}`, origin: 'http://api.test.local' })).status).toBe(200)
    const evil = await post({ authorization: `Bearer ${org.key}`, origin: 'https://evil.example' })
    expect(evil.status).toBe(403)
    expect((await post({ origin: 'https://evil.example' })).status).toBe(403)
  })

  test('stateless: no session id is issued, and GET (a standalone stream) is refused', async () => {
    const res = await post({ authorization: `Bearer ${org.key}` })
    expect(res.headers.get('mcp-session-id')).toBeNull()
    const get = await appFetch(t)('http://api.test.local/mcp', { headers: { authorization: `Bearer ${org.key}`, accept: 'text/event-stream' } })
    expect(get.status).toBe(405)
  })
})

describe('connection keys see only the tools and mail of their address', () => {
  let key: string
  let bound: string
  let sibling: string
  const ids: Record<string, string> = {}

  async function inbound(to: string, subject: string) {
    const raw = new TextEncoder().encode(
      rfc822({ From: 'Sam <sam@sender.example>', To: to, Subject: subject, 'Message-ID': `<${unique()}@sender.example>` }, 'hi'),
    )
    const result = await ingest(t.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo: [to], remoteIp: '192.0.2.1', helo: 'sender.example', tls: false })
    return result.stored.find(s => s.orgId === org.orgId)!.id
  }

  beforeAll(async () => {
    bound = await managedAddress(t.ctx, org.orgId)
    sibling = await managedAddress(t.ctx, org.orgId)
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address: bound } }), 201)
    key = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    ids.toBound = await inbound(bound, 'for the bound address')
    ids.toSibling = await inbound(sibling, 'for the sibling')
  })

  for (const { era, version } of ERAS) {
    test(`${version}: tools of the allow-list only; mail of the bound address only; sending only as it`, async () => {
      const client = await mcpClient(t, key, era)
      const names = (await client.listTools()).tools.map(tool => tool.name)
      expect(names).toEqual([
        'admit_network_agent',
        'create_address_note',
        'create_draft',
        'delete_address_note',
        'delete_draft',
        'discover_network_agents',
        'forward_email',
        'get_address_note',
        'get_contact',
        'get_draft',
        'get_email',
        'label_email',
        'label_emails',
        'list_address_notes',
        'list_contacts',
        'list_drafts',
        'list_emails',
        'list_labels',
        'list_networks',
        'reply_to_email',
        'send_draft',
        'send_email',
        'send_email_batch',
        'update_address_note',
        'update_draft',
        'wait_for_email',
      ])
      const call = async (name: string, args: Record<string, unknown>) =>
        (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent: any }
      const listed = (await call('list_emails', {})).structuredContent.items.map((e: { id: string }) => e.id)
      expect(listed).toContain(ids.toBound)
      expect(listed).not.toContain(ids.toSibling)
      expect(toolErrorOf(await call('get_email', { email_id: ids.toSibling })).code).toBe('not_found')
      expect(toolErrorOf(await call('label_email', { email_id: ids.toSibling, add: ['read'] })).code).toBe('not_found')
      const own = (await call('get_email', { email_id: ids.toBound })).structuredContent
      expect(own.raw_url).toBeNull()
      const asSibling = await call('send_email', { from: sibling, to: 'a@example.com', subject: 's', body_text: 'b', idempotency_key: unique() })
      expect(toolErrorOf(asSibling)).toMatchObject({ code: 'forbidden' })
      expect(toolErrorOf(await call('reply_to_email', { email_id: ids.toSibling, from: bound, body_text: 'x', idempotency_key: unique() })).code).toBe(
        'not_found',
      )
      // a tool outside the allow-list does not exist for this key: the protocol's unknown-tool error
      await expect(call('list_inboxes', {})).rejects.toThrow(/list_inboxes not found/)
      await expect(call('save_contact', { owner_address: bound, address: 'x@example.com' })).rejects.toThrow(/save_contact not found/)
      // contacts: only those of the bound address
      expect((await call('list_contacts', {})).structuredContent.items.every((c: { owner_address: string }) => c.owner_address === bound)).toBe(true)

      // notes: it reads the organization's, writes its own, and may not edit one a member wrote
      const mine = (await call('create_address_note', { address: 'sam@sender.example', body: `by the agent ${era}` })).structuredContent
      expect(mine.author).toMatchObject({ kind: 'connection', address: bound })
      expect((await call('update_address_note', { note_id: mine.id, body: 'edited by the agent', if_version: mine.version })).structuredContent.body).toBe(
        'edited by the agent',
      )
      const members = expectOk(
        await t.request('POST', '/v1/address-notes', { key: org.key, body: { address: 'sam@sender.example', body: `by a member ${era}` } }),
        201,
      )
      expect((await call('list_address_notes', { address: 'sam@sender.example' })).structuredContent.items.map((n: { id: string }) => n.id)).toEqual(
        expect.arrayContaining([mine.id, members.id]),
      )
      expect(toolErrorOf(await call('update_address_note', { note_id: members.id, body: 'not mine', if_version: members.version })).code).toBe('forbidden')
      expect(toolErrorOf(await call('delete_address_note', { note_id: members.id })).code).toBe('forbidden')
      // networks: only those it may browse (none here), and admission only for its own address
      expect((await call('list_networks', {})).structuredContent.items).toEqual([])
      const admit = await call('admit_network_agent', { network_id: crypto.randomUUID(), agent_id: crypto.randomUUID(), owner_address: sibling })
      expect(toolErrorOf(admit)).toMatchObject({ code: 'forbidden' })
      await client.close()
    })
  }
})
