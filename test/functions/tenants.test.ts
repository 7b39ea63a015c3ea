/**
 * Two organizations' functions side by side in one process: one tenant's runaway code does not
 * take the other's turn on the sandbox threads, and one tenant's unauthenticated API calls do
 * not use up the other's limit. Orders and counts only, no timings: a run that had to wait for
 * a loop would wait for its CPU budget of a minute, far past the test's timeout.
 *
 * The limit counts per fixed minute, so a test may cross into the next window while it runs:
 * calls go on until the first 429, bounded by two windows' worth, which an honest bucket reaches
 * whichever way the minutes fall and a bucket per forwarded address never does.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { until } from '../helpers/until'
import { invokeFunction, type Invocation } from '../../src/functions/run'
import { sandboxPool } from '../../src/functions/sandbox/pool'
import { PUBLIC_PER_MINUTE } from '../../src/http/auth'
import { SUBREQUESTS } from '../../src/functions/limits'

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

const bodyOf = (invocation: Invocation | null) => JSON.parse(Buffer.from(invocation!.result.response!.body, 'base64').toString())

/** Invokes until a call is refused with 429, or two windows' worth of calls were all let through; answers every status. */
async function untilRefused(run: () => Promise<Invocation | null>): Promise<number[]> {
  const statuses: number[] = []
  while (!statuses.includes(429) && statuses.length <= 2 * PUBLIC_PER_MINUTE) statuses.push(...bodyOf(await run()))
  return statuses
}

test("one organization's runaway loops neither delay another's function nor run past their organization's cap", async () => {
  const [a, b] = await Promise.all([createOrg(), createOrg()])
  const loop = await deploy(a, `export default { async fetch() { for (;;) {} } }`)
  const trivial = await deploy(b, `export default { async fetch() { return new Response('ok') } }`)
  const pool = sandboxPool(h.ctx)

  const loops = [invoke(a, loop), invoke(a, loop), invoke(a, loop)]
  // two in flight (A's cap), the third waiting in A's queue
  expect(
    await until(
      async () => pool.load(a.orgId),
      load => load.running + load.waiting === 3,
    ),
  ).toEqual({ running: 2, waiting: 1 })

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

test("one organization's functions using up the unauthenticated limit do not make another's get 429", async () => {
  const [a, b] = await Promise.all([createOrg(), createOrg()])
  // as many unauthenticated calls as one invocation may make; answers the statuses it got
  const health = await deploy(
    a,
    `export default { async fetch(request, env) {
    const statuses = []
    for (let i = 0; i < ${SUBREQUESTS}; i++) statuses.push((await fetch(env.SERVICE_API_BASE_URL + '/health')).status)
    return Response.json(statuses)
  } }`,
  )
  const once = await deploy(
    b,
    `export default { async fetch(request, env) {
    return Response.json([(await fetch(env.SERVICE_API_BASE_URL + '/health')).status])
  } }`,
  )

  // A's functions did reach the limit...
  expect(await untilRefused(() => invoke(a, health))).toContain(429)
  // ...which is theirs alone
  expect(bodyOf(await invoke(b, once))).toEqual([200])
})

test("a function's in-process calls cannot pass for another client by a forwarded address", async () => {
  const a = await createOrg()
  const spoof = await deploy(
    a,
    `export default { async fetch(request, env) {
    const statuses = []
    for (let i = 0; i < ${SUBREQUESTS}; i++) statuses.push((await fetch(env.SERVICE_API_BASE_URL + '/health', { headers: { 'x-forwarded-for': '203.0.113.' + i } })).status)
    return Response.json(statuses)
  } }`,
  )
  expect(await untilRefused(() => invoke(a, spoof))).toContain(429)
})
