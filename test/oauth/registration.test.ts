/** Dynamic client registration (RFC 7591): public clients, redirect URI rules, error bodies. */
import { afterAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { oauthServer } from './helpers'
import { roomInWindow } from '../helpers/rate-window'

const s = await oauthServer()
afterAll(() => s.stop())

/** Each from its own client address: the registration limit (30 a minute) is not under test here. */
async function register(body: unknown, contentType = 'application/json') {
  const res = await s.fetchFrom(`198.18.0.${crypto.randomUUID()}`, '/oauth/register', {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, body: (await res.json()) as any }
}

function expectRefused(res: Awaited<ReturnType<typeof register>>, error: string, description?: string | RegExp) {
  expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error })
  expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description'])
  if (description) expect(res.body.error_description).toMatch(description)
}

describe('POST /oauth/register', () => {
  test('oauth4webapi registers a public client: 201 with the registered metadata', async () => {
    const before = Math.floor(Date.now() / 1000)
    const res = await oauth.dynamicClientRegistrationRequest(
      s.as,
      { client_name: 'My agent', redirect_uris: ['https://agent.example/cb', 'http://localhost:3333/cb'] },
      s.opts,
    )
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const client = await oauth.processDynamicClientRegistrationResponse(res)
    expect(client).toMatchObject({
      client_name: 'My agent',
      redirect_uris: ['https://agent.example/cb', 'http://localhost:3333/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    })
    expect(client.client_id).toMatch(/^oc_/)
    expect(client.client_secret).toBeUndefined()
    expect(client.client_id_issued_at as number).toBeGreaterThanOrEqual(before - 1)
  })

  test('loopback http on localhost, 127.0.0.1 and [::1], any port', async () => {
    const res = await register({ client_name: 'cli', redirect_uris: ['http://localhost/cb', 'http://127.0.0.1:49152/cb', 'http://[::1]:8080/callback?x=1'] })
    expect(res.status).toBe(201)
  })

  test('the usual metadata of MCP clients is accepted; client_name is optional', async () => {
    const res = await register({
      redirect_uris: ['https://a.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'service:api',
      logo_uri: 'https://a.example/logo.png',
    })
    expect(res.status).toBe(201)
    expect(res.body.client_name).toBeUndefined()
    expect(res.body.logo_uri).toBeUndefined()
  })

  test('plain http on a public host is invalid_redirect_uri', async () => {
    expectRefused(
      await register({ client_name: 'x', redirect_uris: ['http://agent.example/cb'] }),
      'invalid_redirect_uri',
      /redirect_uris\[0\]: must use https/,
    )
    expectRefused(
      await register({ client_name: 'x', redirect_uris: ['https://ok.example/cb', 'http://10.0.0.1/cb'] }),
      'invalid_redirect_uri',
      /redirect_uris\[1\]/,
    )
    expectRefused(await register({ client_name: 'x', redirect_uris: ['http://localhost.evil.example/cb'] }), 'invalid_redirect_uri')
  })

  test('a fragment, even an empty one, is invalid_redirect_uri', async () => {
    expectRefused(await register({ redirect_uris: ['https://agent.example/cb#frag'] }), 'invalid_redirect_uri', /fragment/)
    expectRefused(await register({ redirect_uris: ['https://agent.example/cb#'] }), 'invalid_redirect_uri', /fragment/)
  })

  test('other schemes, relative URIs, user information and odd characters are refused', async () => {
    for (const uri of [
      'com.example.app:/cb',
      'javascript:alert(1)',
      'data:text/html,hi',
      '/cb',
      'https://user:pw@agent.example/cb',
      'https://agent.example/c b',
      'https:\\\\agent.example\\cb',
      'https://a;b.example/cb',
      '',
    ]) {
      expectRefused(await register({ redirect_uris: [uri] }), 'invalid_redirect_uri')
    }
  })

  test('1 to 20 redirect URIs: none, 21 or a non-array are refused', async () => {
    const uris = Array.from({ length: 21 }, (_, i) => `https://agent.example/cb${i}`)
    expectRefused(await register({ redirect_uris: uris }), 'invalid_redirect_uri', /at most 20/)
    expect((await register({ redirect_uris: uris.slice(0, 20) })).status).toBe(201)
    expectRefused(await register({ redirect_uris: [] }), 'invalid_redirect_uri')
    expectRefused(await register({ client_name: 'x' }), 'invalid_redirect_uri')
    expectRefused(await register({ redirect_uris: 'https://agent.example/cb' }), 'invalid_redirect_uri')
  })

  test('confidential clients and unsupported grants are invalid_client_metadata', async () => {
    const uris = ['https://agent.example/cb']
    expectRefused(await register({ redirect_uris: uris, token_endpoint_auth_method: 'client_secret_basic' }), 'invalid_client_metadata', /none/)
    expectRefused(await register({ redirect_uris: uris, grant_types: ['client_credentials'] }), 'invalid_client_metadata')
    expectRefused(await register({ redirect_uris: uris, grant_types: ['refresh_token'] }), 'invalid_client_metadata')
    expectRefused(await register({ redirect_uris: uris, response_types: ['token'] }), 'invalid_client_metadata')
    expectRefused(await register({ redirect_uris: uris, scope: 'admin' }), 'invalid_client_metadata')
    expectRefused(await register({ redirect_uris: uris, client_name: 42 }), 'invalid_client_metadata')
    expectRefused(await register({ redirect_uris: uris, client_name: 'x'.repeat(201) }), 'invalid_client_metadata')
  })

  test('a body that is not a JSON object is invalid_client_metadata', async () => {
    expectRefused(await register('redirect_uris=https://agent.example/cb', 'application/x-www-form-urlencoded'), 'invalid_client_metadata')
    expectRefused(await register(['https://agent.example/cb']), 'invalid_client_metadata')
  })

  test('CORS: browser-based clients may register and use the token endpoint', async () => {
    const pre = await s.fetch('/oauth/register', { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('*')
    expect(pre.headers.get('access-control-allow-headers')).toContain('content-type')
    const res = await register({ redirect_uris: ['https://app.example/cb'] })
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
  })
})

describe('rate limit', () => {
  test('past 30 registrations a minute from one address: 429 slow_down with Retry-After', async () => {
    await roomInWindow()
    const ip = `198.19.0.${crypto.randomUUID()}`
    const body = JSON.stringify({ redirect_uris: ['https://agent.example/cb'] })
    const post = () => s.fetchFrom(ip, '/oauth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const statuses = await Promise.all(Array.from({ length: 30 }, async () => (await post()).status))
    expect(statuses.every(status => status === 201)).toBe(true)
    const limited = await post()
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await limited.json()).toMatchObject({ error: 'slow_down' })
  })
})

describe('OpenAPI', () => {
  test('the OAuth operations are documented as public, under the OAuth tag', async () => {
    const doc = (await (await s.fetch('/v1/openapi')).json()) as any
    for (const [path, method] of [
      ['/.well-known/oauth-authorization-server', 'get'],
      ['/oauth/register', 'post'],
      ['/oauth/authorize', 'get'],
      ['/oauth/authorize', 'post'],
      ['/oauth/token', 'post'],
      ['/oauth/revoke', 'post'],
    ] as const) {
      const op = doc.paths[path][method]
      expect(op.security).toEqual([])
      expect(op.tags).toEqual(['OAuth'])
      expect(op.responses['401']).toBeUndefined()
    }
    expect(Object.keys(doc.paths['/oauth/token'].post.requestBody.content)).toEqual(['application/x-www-form-urlencoded'])
  })
})
