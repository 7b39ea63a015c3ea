/**
 * OAuth for the MCP server: tokens are bound to the resource they were asked for (RFC 8707), a
 * read-only grant is stepped up with 403 insufficient_scope, and a client may identify itself
 * with a client ID metadata document instead of registering. The authorization server runs on a
 * loopback port; the document is served by a second loopback server (loopback fetches are
 * allowed in this test the way WEBHOOK_ALLOW_LOOPBACK allows them in development).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  auth,
  Client,
  StreamableHTTPClientTransport,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client'
import { authorizeUrl, callApi, loadPage, person, pkce, registerClient, submit, tokenRequest, type OAuthServer, type Person } from '../oauth/helpers'
import { oauthServer } from '../oauth/helpers'

let s: OAuthServer
let who: Person
let documents: ReturnType<typeof Bun.serve>
const served = new Map<string, unknown>()

beforeAll(async () => {
  s = await oauthServer({ WEBHOOK_ALLOW_LOOPBACK: 'true' })
  who = await person('owner')
  documents = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: req => (served.has(new URL(req.url).pathname) ? Response.json(served.get(new URL(req.url).pathname)) : new Response('no', { status: 404 })),
  })
})
afterAll(async () => {
  await documents.stop(true)
  await s.stop()
})

/** Signs in on the authorization page and exchanges the code, with extra authorization parameters. */
async function tokensFor(client: { client_id: string; redirect_uris?: unknown }, params: Record<string, string>, tokenParams: Record<string, string> = {}) {
  const p = await pkce()
  const page = await loadPage(s, authorizeUrl(s, client as never, p, params))
  const res = await submit(s, page, { email: who.email, password: who.password, org_id: who.orgId, action: 'allow' })
  expect(res.status).toBe(303)
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!
  const redirect = (client.redirect_uris as string[])[0]!
  return tokenRequest(s, {
    grant_type: 'authorization_code',
    client_id: client.client_id,
    code,
    redirect_uri: redirect,
    code_verifier: p.verifier,
    ...tokenParams,
  })
}

function mcpPost(token: string, body: unknown) {
  return s.fetch('/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify(body),
  })
}

async function sdkClient(token: string) {
  const transport = new StreamableHTTPClientTransport(new URL(`${s.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } })
  const client = new Client({ name: 'oauth-test', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(transport)
  return client
}

describe('tokens are bound to their resource', () => {
  test('a token asked for the MCP resource works at /mcp and is refused by the REST API', async () => {
    const client = await registerClient(s)
    const res = await tokensFor(client, { resource: `${s.origin}/mcp` }, { resource: `${s.origin}/mcp` })
    expect(res.status).toBe(200)
    const tokens = res.body as { access_token: string; scope: string }
    expect(tokens.scope).toBe('service:api')
    const mcp = await sdkClient(tokens.access_token)
    const inboxes = (await mcp.callTool({ name: 'list_inboxes', arguments: {} })) as { isError?: boolean }
    expect(inboxes.isError).toBeFalsy()
    await mcp.close()
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(401)
  })

  test('a token for the REST API (no resource named) is refused by /mcp with the MCP challenge', async () => {
    const client = await registerClient(s)
    const tokens = (await tokensFor(client, {})).body as { access_token: string }
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(200)
    const res = await mcpPost(tokens.access_token, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${s.origin}/.well-known/oauth-protected-resource/mcp"`)
  })

  test("a resource we do not serve is invalid_target; the token endpoint refuses a resource other than the grant's", async () => {
    const client = await registerClient(s)
    const p = await pkce()
    const res = await s.fetch(authorizeUrl(s, client, p, { resource: 'https://elsewhere.example/api' }))
    expect(res.status).toBe(302)
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_target')
    const mismatch = await tokensFor(client, { resource: `${s.origin}/mcp` }, { resource: `${s.origin}/v1` })
    expect(mismatch.status).toBe(400)
    expect((mismatch.body as { error: string }).error).toBe('invalid_target')
  })
})

/** An OAuthClientProvider the way an MCP client keeps its state, in memory; it records where the SDK sends the browser. */
function memoryProvider(redirect: string) {
  const state: {
    client?: StoredOAuthClientInformation
    tokens?: StoredOAuthTokens
    verifier?: string
    discovery?: OAuthDiscoveryState
    authorizationUrl?: URL
  } = {}
  const provider: OAuthClientProvider = {
    redirectUrl: redirect,
    clientMetadata: {
      client_name: 'Stock MCP client',
      redirect_uris: [redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    clientInformation: () => state.client,
    saveClientInformation: client => void (state.client = client),
    tokens: () => state.tokens,
    saveTokens: tokens => void (state.tokens = tokens),
    redirectToAuthorization: url => void (state.authorizationUrl = url),
    saveCodeVerifier: verifier => void (state.verifier = verifier),
    codeVerifier: () => state.verifier!,
    saveDiscoveryState: discovery => void (state.discovery = discovery),
    discoveryState: () => state.discovery,
  }
  return { provider, state }
}

describe("the SDK's own auth() flow", () => {
  test('discovers from the MCP resource, registers with the advertised scopes, and gets a token that calls tools', async () => {
    const redirect = 'http://127.0.0.1:8765/callback'
    const { provider, state } = memoryProvider(redirect)
    const serverUrl = `${s.origin}/mcp`
    const fetchFn = (url: string | URL, init?: RequestInit) => s.fetch(new URL(url).pathname + new URL(url).search, init)
    expect(await auth(provider, { serverUrl, fetchFn })).toBe('REDIRECT')
    expect(state.client?.client_id).toStartWith('oc_')
    const authorizationUrl = state.authorizationUrl!
    expect(authorizationUrl.searchParams.get('scope')).toBe('service:api service:read')
    const page = await loadPage(s, authorizationUrl.pathname + authorizationUrl.search)
    const res = await submit(s, page, { email: who.email, password: who.password, org_id: who.orgId, action: 'allow' })
    expect(res.status).toBe(303)
    const callback = new URL(res.headers.get('location')!)
    const code = callback.searchParams.get('code')!
    expect(await auth(provider, { serverUrl, fetchFn, authorizationCode: code, iss: callback.searchParams.get('iss') ?? undefined })).toBe('AUTHORIZED')
    expect(state.tokens?.scope).toBe('service:api')
    const mcp = await sdkClient(state.tokens!.access_token)
    expect(((await mcp.callTool({ name: 'list_inboxes', arguments: {} })) as { isError?: boolean }).isError).toBeFalsy()
    await mcp.close()
  })
})

describe('scopes and step-up', () => {
  test('a service:read token reads; a sending tool is 403 insufficient_scope naming service:api', async () => {
    const client = await registerClient(s)
    const tokens = (await tokensFor(client, { resource: `${s.origin}/mcp`, scope: 'service:read' })).body as { access_token: string; scope: string }
    expect(tokens.scope).toBe('service:read')
    const mcp = await sdkClient(tokens.access_token)
    expect(((await mcp.callTool({ name: 'list_emails', arguments: {} })) as { isError?: boolean }).isError).toBeFalsy()
    await mcp.close()
    const send = await mcpPost(tokens.access_token, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'send_email', arguments: { from: 'a@b.example', to: 'c@d.example', subject: 's', body_text: 'b', idempotency_key: 'k' } },
    })
    expect(send.status).toBe(403)
    const challenge = send.headers.get('www-authenticate')!
    expect(challenge).toContain('error="insufficient_scope"')
    expect(challenge).toContain('scope="service:api"')
    expect(challenge).toContain(`resource_metadata="${s.origin}/.well-known/oauth-protected-resource/mcp"`)
  })

  test('service:read is offered for the MCP resource only', async () => {
    const client = await registerClient(s)
    const res = await s.fetch(authorizeUrl(s, client, await pkce(), { scope: 'service:read' }))
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_scope')
  })
})

describe('client ID metadata documents', () => {
  const redirect = 'http://127.0.0.1:8765/callback'
  const documentUrl = (path: string) => `http://127.0.0.1:${documents.port}${path}`

  test('an unregistered client identified by its document URL completes the flow and gets a working /mcp token', async () => {
    const id = documentUrl('/agents/client.json')
    served.set('/agents/client.json', { client_id: id, client_name: 'Metadata agent', redirect_uris: [redirect], token_endpoint_auth_method: 'none' })
    const res = await tokensFor({ client_id: id, redirect_uris: [redirect] }, { resource: `${s.origin}/mcp` })
    expect(res.status).toBe(200)
    const tokens = res.body as { access_token: string }
    expect(
      (
        await mcpPost(tokens.access_token, {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
        })
      ).status,
    ).toBe(200)
  })

  test('a document naming another client_id, a redirect URI it does not list, or a private address is refused', async () => {
    const id = documentUrl('/agents/liar.json')
    served.set('/agents/liar.json', { client_id: documentUrl('/agents/other.json'), redirect_uris: [redirect] })
    const p = await pkce()
    const liar = await s.fetch(authorizeUrl(s, { client_id: id, redirect_uris: [redirect] } as never, p))
    expect(liar.status).toBe(400)
    expect(await liar.text()).toContain('names another client_id')
    const honest = documentUrl('/agents/honest.json')
    served.set('/agents/honest.json', { client_id: honest, redirect_uris: ['http://127.0.0.1:9999/elsewhere'] })
    expect((await s.fetch(authorizeUrl(s, { client_id: honest, redirect_uris: [redirect] } as never, p))).status).toBe(400)
    const internal = await s.fetch(authorizeUrl(s, { client_id: 'https://10.1.2.3/client.json', redirect_uris: [redirect] } as never, p))
    expect(internal.status).toBe(400)
    expect(await internal.text()).toContain('publicly reachable')
  })
})
