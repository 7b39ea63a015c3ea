/** The public discovery entry, the health check and the protected-resource metadata. */
import { describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app'
import { createContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { connectUrl } from '../../src/db/client'
import pkg from '../../package.json'
import { testApp, testConfig, TEST_SECRET } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { PLUGINS } from '../../src/plugins'

const { request } = await testApp()

describe('GET /v1/health', () => {
  test('200 ok with the database up', async () => {
    const res = await request('GET', '/v1/health')
    const data = expectOk(res)
    expect(data.status).toBe('ok')
    expect(data.version).toBe(pkg.version)
    expect(Number.isInteger(data.uptime_s)).toBe(true)
    expect(data.dependencies.database.status).toBe('up')
    expect(typeof data.dependencies.database.latency_ms).toBe('number')
    expect(data.dependencies.database.error).toBeUndefined()
  })

  test('503 with the database down: the error envelope, Retry-After, and the typed payload in details', async () => {
    const ctx = createContext(testConfig(), connectUrl('postgres://postgres@127.0.0.1:1/x', 1), new ServerKeys(TEST_SECRET), { plugins: PLUGINS })
    const app = createApp(ctx)
    try {
      const res = await app.handle(new Request('http://api.test.local/v1/health', { headers: { 'x-forwarded-for': '192.0.2.200' } }))
      const body = (await res.json()) as any
      expectError({ status: res.status, headers: res.headers, body }, 503, 'database_unavailable', 'database: unreachable; retry after 5 seconds')
      expect(res.headers.get('retry-after')).toBe('5')
      const details = body.error.details
      expect(details.status).toBe('unavailable')
      expect(details.version).toBe(pkg.version)
      expect(details.dependencies.database.status).toBe('down')
      expect(details.dependencies.database.error).toBe('unreachable')
      expect(JSON.stringify(body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres:/)
      expect(res.headers.get('cache-control')).toBe('no-store')
    } finally {
      await ctx.sql.end({ timeout: 1 })
    }
  })
})

describe('GET /v1', () => {
  test('discovery links, without a credential', async () => {
    const res = await request('GET', '/v1')
    expect(expectOk(res)).toEqual({
      name: 'agent mail service',
      version: pkg.version,
      api_base_url: 'http://api.test.local/v1',
      openapi_url: 'http://api.test.local/v1/openapi',
      docs_url: 'http://api.test.local/docs',
      health_url: 'http://api.test.local/v1/health',
      graphql_url: 'http://api.test.local/graphql',
      oauth_authorization_server: 'http://api.test.local/.well-known/oauth-authorization-server',
      oauth_protected_resource: 'http://api.test.local/.well-known/oauth-protected-resource',
      managed_domain: 'agents.test.local',
    })
  })

  test('the links resolve on this app', async () => {
    const data = expectOk(await request('GET', '/v1'))
    for (const url of [data.openapi_url, data.health_url, data.oauth_protected_resource]) {
      expect((await request('GET', new URL(url).pathname)).status).toBe(200)
    }
  })

  test('SITE_URL moves the site links, not the API ones', async () => {
    const site = await testApp({ SITE_URL: 'https://site.test.local' })
    const data = expectOk(await site.request('GET', '/v1'))
    expect(data.docs_url).toBe('https://site.test.local/docs')
    expect(data.oauth_protected_resource).toBe('https://site.test.local/.well-known/oauth-protected-resource')
    expect(data.api_base_url).toBe('http://api.test.local/v1')
  })
})

describe('GET /.well-known/oauth-protected-resource', () => {
  test('RFC 9728 metadata naming the API as the resource', async () => {
    const res = await request('GET', '/.well-known/oauth-protected-resource')
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      resource: 'http://api.test.local/v1',
      authorization_servers: ['http://api.test.local'],
      bearer_methods_supported: ['header'],
      scopes_supported: ['service:api'],
    })
  })
})
