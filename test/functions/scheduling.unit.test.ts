/**
 * How the sandbox pool shares its threads among organizations: another organization's runaway
 * loops never sit in front of a run, an organization's runs past its cap wait in its own queue,
 * and the queues are served in turn. Orders and counts only, no timings: a run that had to
 * wait for a loop would wait for its CPU budget of a minute, far past the test's timeout.
 */
import { afterEach, expect, test } from 'bun:test'
import { SandboxPool } from '../../src/functions/sandbox/pool'
import { runLimits } from '../../src/functions/limits'
import type { FetchAnswer, GuestFetch, RunRequest, RunResult } from '../../src/functions/sandbox/protocol'

const limits = runLimits({ FUNCTION_CPU_MS: 60_000, FUNCTION_WALL_CLOCK_MS: 120_000 })
const request = { method: 'POST', url: 'https://functions.internal/t', headers: [] as [string, string][], body: null }
const noFetch = async (): Promise<FetchAnswer> => ({ error: 'no fetch here' })

const invoke = (code: string): RunRequest => ({ kind: 'invoke', code, request, env: {}, limits })
const LOOP = invoke(`export default { async fetch() { for (;;) {} } }`)
const TRIVIAL = invoke(`export default { async fetch() { return new Response('ok') } }`)
/** Answers once the host answers its fetch: holds its thread's turn without computing. */
const WAITING = invoke(`export default { async fetch() { await fetch('https://example.com/'); return new Response('ok') } }`)

let pool: SandboxPool | undefined
afterEach(() => pool?.stop())

/** Whether `promise` has settled by the time the runs that are ready have had their turn. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false
  promise.then(() => (done = true))
  await Bun.sleep(0)
  return done
}

test("another organization's runaway loops do not delay a run, and its runs past its cap wait in its queue", async () => {
  pool = new SandboxPool(2, { orgThreads: 1, orgRuns: 2 })
  const loops = [pool.run(LOOP, noFetch, 'org-a'), pool.run(LOOP, noFetch, 'org-a'), pool.run(LOOP, noFetch, 'org-a')]
  // two loops in flight on the one thread A may hold, the third waiting in A's queue
  expect(pool.load('org-a')).toEqual({ running: 2, waiting: 1 })

  const trivial = pool.run(TRIVIAL, noFetch, 'org-b')
  expect(pool.load('org-b')).toEqual({ running: 1, waiting: 0 })
  const result = await trivial
  expect(result.outcome).toBe('ok')
  // B's run ended while all of A's are still going or waiting
  for (const loop of loops) expect(await settled(loop)).toBe(false)
  expect(pool.load('org-a')).toEqual({ running: 2, waiting: 1 })

  pool.stop()
  const ends = await Promise.all(loops)
  expect(ends.map(r => r.outcome)).toEqual(['crashed', 'crashed', 'crashed'])
  expect(pool.load('org-a')).toEqual({ running: 0, waiting: 0 })
})

test('the queues of organizations waiting for a thread are served in turn, not first come first served', async () => {
  pool = new SandboxPool(1, { orgThreads: 1, orgRuns: 1 })
  // X holds the only thread until its fetch is answered
  let answer!: (value: FetchAnswer) => void
  const held = new Promise<FetchAnswer>(resolve => (answer = resolve))
  let fetched!: () => void
  const fetching = new Promise<void>(resolve => (fetched = resolve))
  const x = pool.run(WAITING, (_arg: GuestFetch) => (fetched(), held), 'org-x')
  await fetching

  const order: string[] = []
  const queued = (name: string, tenant: string) => pool!.run(TRIVIAL, noFetch, tenant).then((r: RunResult) => (order.push(name), r))
  const runs = [queued('a1', 'org-a'), queued('a2', 'org-a'), queued('a3', 'org-a'), queued('b1', 'org-b')]
  expect(pool.load('org-a')).toEqual({ running: 0, waiting: 3 })
  expect(pool.load('org-b')).toEqual({ running: 0, waiting: 1 })

  answer({ status: 200, statusText: 'OK', headers: [], body: null, url: 'https://example.com/', redirected: false })
  expect((await x).outcome).toBe('ok')
  expect((await Promise.all(runs)).map(r => r.outcome)).toEqual(['ok', 'ok', 'ok', 'ok'])
  expect(order).toEqual(['a1', 'b1', 'a2', 'a3'])
})

test('runs that name no organization share the threads as before', async () => {
  pool = new SandboxPool(2)
  const results = await Promise.all(Array.from({ length: 6 }, () => pool!.run(TRIVIAL, noFetch)))
  expect(results.map(r => r.outcome)).toEqual(Array(6).fill('ok'))
})
