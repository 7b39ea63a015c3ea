/**
 * Two organizations' functions side by side in one process: one tenant's runaway code does not
 * take the other's turn on the sandbox threads. Orders and counts only, no timings: a run that
 * had to wait for a loop would wait for its CPU budget of a minute, far past the test's timeout.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { until } from '../helpers/until'
import { invokeFunction } from '../../src/functions/run'
import { sandboxPool } from '../../src/functions/sandbox/pool'

const ENV = { FUNCTION_CPU_MS: '60000', FUNCTION_WALL_CLOCK_MS: '120000', FUNCTION_THREADS: '2', FUNCTION_ORG_THREADS: '1', FUNCTION_ORG_CONCURRENCY: '2' }

let h: TestApp
beforeAll(async () => {
  h = await testApp(ENV)
})
afterAll(() => sandboxPool(h.ctx).stop())

let n = 0
async function deploy(org: TestOrg, code: string): Promise<string> {
  const fn = expectOk(await h.request('POST', '/v1/functions', { key: org.key, body: { name: `tenant-${++n}-${crypto.randomUUID().slice(0, 8)}`, code } }), 201)
  expect(fn.deploy_status).toBe('deployed')
  return fn.id
}

const invoke = (org: TestOrg, functionId: string) =>
  invokeFunction(h.ctx, { orgId: org.orgId, functionId, request: { method: 'POST', url: 'https://functions.internal/t', headers: [], body: null } })

test("one organization's runaway loops neither delay another's function nor run past their organization's cap", async () => {
  const [a, b] = await Promise.all([createOrg(), createOrg()])
  const loop = await deploy(a, `export default { async fetch() { for (;;) {} } }`)
  const trivial = await deploy(b, `export default { async fetch() { return new Response('ok') } }`)
  const pool = sandboxPool(h.ctx)

  const loops = [invoke(a, loop), invoke(a, loop), invoke(a, loop)]
  // two in flight (A's cap), the third waiting in A's queue
  expect(await until(async () => pool.load(a.orgId), load => load.running + load.waiting === 3)).toEqual({ running: 2, waiting: 1 })

  const ran = await invoke(b, trivial)
  expect(ran!.result.outcome).toBe('ok')
  let aEnded = 0
  for (const l of loops) l.then(() => aEnded++)
  await Bun.sleep(0)
  expect(aEnded).toBe(0)
  expect(pool.load(a.orgId)).toEqual({ running: 2, waiting: 1 })

  pool.stop()
  expect((await Promise.all(loops)).map(i => i!.result.outcome)).toEqual(['crashed', 'crashed', 'crashed'])
})
