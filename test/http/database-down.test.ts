/**
 * While PostgreSQL cannot be reached the API answers 503 database_unavailable with Retry-After,
 * and it recovers by itself when the database comes back. The outage is a TCP proxy on
 * 127.0.0.1 in front of the test database that the test closes (cutting every connection)
 * and opens again on the same port (test/helpers/tcp-proxy.ts); the machine's PostgreSQL itself
 * keeps running.
 */
import { afterAll, expect, test } from 'bun:test'
import { createApp } from '../../src/app'
import { createContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { createOrg, testConfig, TEST_SECRET, type TestResponse } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { expectError, expectOk } from '../helpers/envelope'
import { proxiedDatabase } from '../helpers/tcp-proxy'
import { PLUGINS } from '../../src/plugins'

const db = await testDatabase()
const { proxy, sql: proxied } = proxiedDatabase(db.url, 2)
const ctx = createContext(testConfig(), proxied, new ServerKeys(TEST_SECRET), { plugins: PLUGINS })
const app = createApp(ctx)
const org = await createOrg()

afterAll(async () => {
  proxy.cut()
  await ctx.sql.end({ timeout: 1 })
})

async function get(path: string, key?: string): Promise<TestResponse> {
  const headers: Record<string, string> = { 'x-forwarded-for': '192.0.2.41' }
  if (key) headers.authorization = `Bearer ${key}`
  const res = await app.handle(new Request(`http://api.test.local${path}`, { headers }))
  return { status: res.status, headers: res.headers, body: await res.json() }
}

test.skipIf(db.kind !== 'postgres')('503 database_unavailable with Retry-After while the database is cut off, then recovery by itself', async () => {
  expectOk(await get('/v1/inboxes', org.key))
  expectOk(await get('/v1/health'))

  proxy.cut()
  for (const res of [await get('/v1/inboxes', org.key), await get('/v1/inboxes', org.key)]) {
    expectError(res, 503, 'database_unavailable', 'database: unreachable at the moment; retry after 5 seconds')
    expect(res.headers.get('retry-after')).toBe('5')
  }
  const health = await get('/v1/health')
  expectError(health, 503, 'database_unavailable')
  expect(health.headers.get('retry-after')).toBe('5')
  expect(health.body.error.details.dependencies.database.status).toBe('down')

  proxy.open()
  expectOk(await get('/v1/inboxes', org.key))
  expect(expectOk(await get('/v1/health')).status).toBe('ok')
})
