/**
 * A plan change made by another process (the operator's bin/admin) applies at once in a serving
 * process: it is announced on the `orgs` channel, and the x402 entitlement cache and the
 * credential cache forget the organization instead of keeping it for their time to live (issue 31).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CACHE_TTL_MS } from '../../src/auth/credentials'
import { startService, type Service } from '../../src/index'
import { createOrg, TEST_SECRET, type TestOrg } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { devEnv, REPO } from '../helpers/dev-process'

const db = await testDatabase()
// bin/admin is a process of its own, and the service listens for NOTIFY: both need a server
const onServer = db.kind === 'postgres'

let service: Service
let org: TestOrg
let base: string
beforeAll(async () => {
  if (!onServer) return
  service = await startService({
    DATABASE_URL: db.url,
    ROLES: 'api',
    PORT: '0',
    HOST: '127.0.0.1',
    SECRET_KEY: TEST_SECRET,
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test',
  })
  base = `http://127.0.0.1:${service.running.apiPort}`
  org = await createOrg({ plan: 'power' })
})
afterAll(() => service?.shutdown('test'))

const payments = () => fetch(`${base}/v1/x402/payments`, { headers: { authorization: `Bearer ${org.key}` } })

async function adminSetPlan(orgId: string, plan: string) {
  const env = devEnv({ DATABASE_URL: db.url, SECRET_KEY: TEST_SECRET, DATA_DIR: mkdtempSync(join(tmpdir(), 'plan-admin-')) })
  const proc = Bun.spawn([join(REPO, 'bin/admin'), 'org', 'set-plan', orgId, plan], { env, stdout: 'pipe', stderr: 'pipe' })
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`bin/admin org set-plan exited with ${code}: ${stderr}`)
}

test.skipIf(!onServer)('losing x402_payments in another process refuses the next request, well within the caches’ time to live', async () => {
  // entitled, and remembered as such by this process
  expect((await payments()).status).toBe(200)
  expect((await payments()).status).toBe(200)
  const changed = performance.now()
  await adminSetPlan(org.orgId, 'developer')
  let status = 200
  while (status === 200 && performance.now() - changed < CACHE_TTL_MS / 2) {
    status = (await payments()).status
    if (status === 200) await Bun.sleep(50)
  }
  expect(status).toBe(403)
  expect(((await (await payments()).json()) as { error: { code: string } }).error.code).toBe('feature_disabled')
  // the account reads the new plan too
  const account = (await (await fetch(`${base}/v1/account`, { headers: { authorization: `Bearer ${org.key}` } })).json()) as { data: { plan: string } }
  expect(account.data.plan).toBe('developer')
})
