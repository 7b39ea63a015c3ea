/** The app harness: an app instance on the test database, a request helper and factories. */
import { createApp } from '../../src/app'
import { serveApiCallsWith } from '../../src/functions/guest-fetch'
import { loadConfig, type Config } from '../../src/config'
import { createContext, type AppContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import type { Sql } from '../../src/db/client'
import type { Replica } from '../../src/db/replica'
import type { Resolver } from '../../src/dns/resolver'
import { createApiKey } from '../../src/auth/api-keys'
import { addMember } from '../../src/account/membership-queries'
import { ensureUser } from '../../src/account/user-queries'
import { insertOrg } from '../../src/account/org-queries'
import type { Plan } from '../../src/account/plans'
import type { Role } from '../../src/auth/principal'
import { testDatabase } from './database'
import { PLUGINS } from '../../src/plugins'

export const TEST_SECRET = 'test-secret-key-0123456789abcdef-0123456789'

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    SECRET_KEY: TEST_SECRET,
    PUBLIC_URL: 'http://api.test.local',
    MANAGED_DOMAIN: 'agents.test.local',
    TRUST_PROXY: 'true',
    LOG_LEVEL: 'silent',
    ...env,
  })
}

export async function testSql(): Promise<Sql> {
  return (await testDatabase()).sql
}

export interface TestApp {
  ctx: AppContext
  app: ReturnType<typeof createApp>
  /** Sends a request in-process; `key` becomes the bearer, `body` is JSON-encoded. */
  request(method: string, path: string, opts?: { key?: string; body?: unknown; headers?: Record<string, string>; ip?: string }): Promise<TestResponse>
}

export interface TestResponse {
  status: number
  headers: Headers
  body: any
}

let ipCounter = 0
/** A fresh client address per app, so the per-address limit of one test never throttles another. */
const nextIp = () => `198.51.100.${(ipCounter = (ipCounter % 250) + 1)}.${Math.floor(Math.random() * 1e6)}`

/**
 * `opts.resolver` replaces DNS (e.g. `memoryResolver(records)`); by default the system resolver.
 * `opts.sql` is another database than the test database (with `opts.replica` reading from a replica of it).
 */
export async function testApp(env: Record<string, string> = {}, opts: { resolver?: Resolver; sql?: Sql; replica?: Replica } = {}): Promise<TestApp> {
  const { sql = await testSql(), ...rest } = opts
  const ctx = createContext(testConfig(env), sql, new ServerKeys(TEST_SECRET), { plugins: PLUGINS, ...rest })
  const app = createApp(ctx)
  serveApiCallsWith(ctx, async () => request => app.handle(request))
  const defaultIp = nextIp()
  return {
    ctx,
    app,
    async request(method, path, opts = {}) {
      const headers = new Headers(opts.headers)
      headers.set('x-forwarded-for', opts.ip ?? defaultIp)
      if (opts.key) headers.set('authorization', `Bearer ${opts.key}`)
      let body: string | undefined
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body)
        if (!headers.has('content-type')) headers.set('content-type', 'application/json')
      }
      const res = await app.handle(new Request(`http://api.test.local${path}`, { method, headers, body }))
      const text = await res.text()
      let parsed: unknown = text
      try {
        parsed = JSON.parse(text)
      } catch {}
      return { status: res.status, headers: res.headers, body: parsed }
    },
  }
}

export interface TestOrg {
  orgId: string
  userId: string
  key: string
  keyId: string
}

let orgCounter = 0

/** A new organization with one person of `role` and an API key created by that person (in the test database, or `opts.sql`). */
export async function createOrg(opts: { plan?: Plan; role?: Role; sql?: Sql } = {}): Promise<TestOrg> {
  const sql = opts.sql ?? (await testSql())
  return sql.begin(async tx => {
    const n = ++orgCounter
    const orgId = await insertOrg(tx, { name: `Test org ${n}`, plan: opts.plan ?? 'developer' })
    const userId = await ensureUser(tx, `person-${n}-${crypto.randomUUID()}@example.test`)
    await addMember(tx, orgId, userId, opts.role ?? 'owner')
    const key = await createApiKey(tx, orgId, userId, 'test key')
    return { orgId, userId, key: key.key, keyId: key.id }
  })
}
