/**
 * Failures the guest's own code raises inside the engine: nesting deeper than the thread's
 * native stack aborts the WebAssembly instance mid-call (a RangeError thrown through its frames
 * before QuickJS's own stack check trips), and filling the heap until QuickJS cannot even
 * allocate its `out of memory` error (it throws null). Each ends that run with its own outcome
 * and a useful message, the sandbox is thrown away and replaced, and neither the thread nor a
 * run in flight beside it on the same thread is touched.
 *
 * Which stack runs out first depends on how far the engine's WebAssembly has been optimized
 * (unoptimized frames take more native stack): the first deep nesting in a fresh thread usually
 * aborts the instance, later ones usually meet QuickJS's check. Both are `exceeded_limit`. The
 * first test makes the abort certain by running the guest on a host stack that is nearly used up.
 */
import { afterAll, expect, test } from 'bun:test'
import { SandboxPool } from '../../src/functions/sandbox/pool'
import { runInSandbox, WarmSandboxes } from '../../src/functions/sandbox/engine'
import { runLimits } from '../../src/functions/limits'
import type { FetchAnswer, RunRequest, RunResult } from '../../src/functions/sandbox/protocol'

// one thread, so the runs below share it and a warm sandbox is found again
const pool = new SandboxPool(1)
afterAll(() => pool.stop())
const limits = runLimits({ FUNCTION_CPU_MS: 10_000, FUNCTION_WALL_CLOCK_MS: 20_000 })

/** A deployment whose module counts its invocations: a fresh sandbox starts again at 1. */
const deployment = (key: string, onRun: string) => ({
  code: `let runs = 0
export default { async fetch(request) {
  runs++
  const mode = new URL(request.url).searchParams.get('mode')
  ${onRun}
  return new Response('run ' + runs)
} }`,
  warmKey: key,
})

async function invoke(
  d: { code: string; warmKey: string },
  mode: string,
  fetch: () => Promise<FetchAnswer> = async () => ({ error: 'no fetch here' }),
): Promise<RunResult & { text: string | null }> {
  const request = { method: 'GET', url: `https://functions.internal/t?mode=${mode}`, headers: [], body: null }
  const result = await pool.run({ kind: 'invoke', ...d, request, env: {}, limits }, fetch)
  return { ...result, text: result.response ? Buffer.from(result.response.body, 'base64').toString() : null }
}

const ABORTED = /^stack overflow: the code nested too deep for the sandbox, whose engine ran out of native stack \(.*call stack.*\); the sandbox was discarded$/
/** Either of the two ways a nesting too deep ends (see above). */
const STACK = /^stack overflow($|: the code nested too deep)/

/**
 * Calls `fn` with only a little of this thread's native stack left: recurses until the stack
 * overflows, then calls `fn` on the way back up, FRAMES frames above the deepest one. The frames
 * left below are the very ones that overflowed, so the room is the same from run to run; measuring
 * the depth with one function and descending with another left a room that moved with how the
 * JIT compiled each (and the engine's own nesting limit sometimes came first).
 */
function onNearlyFullStack<T>(fn: () => T): T {
  const FRAMES = 400
  let result: { value: T } | undefined
  let called = false
  const climb = (): number => {
    let below: number
    try {
      below = climb()
    } catch {
      return 0
    }
    if (below === FRAMES && !called) {
      called = true
      result = { value: fn() }
    }
    return below + 1
  }
  climb()
  if (!result) throw new Error(called ? 'fn threw on the nearly full stack' : 'the stack overflowed fewer than FRAMES frames deep')
  return result.value
}

test('the guest nesting past the native stack aborts the WebAssembly instance mid-call: exceeded_limit, discarded, replaced', async () => {
  const warm = new WarmSandboxes()
  const d = deployment('engine', `if (mode === 'bomb') JSON.parse('['.repeat(100_000))`)
  const req = (mode: string): RunRequest => ({
    kind: 'invoke',
    ...d,
    request: { method: 'GET', url: `https://functions.internal/t?mode=${mode}`, headers: [], body: null },
    env: {},
    limits,
  })
  const bridge = { request: async () => ({ error: 'no fetch here' }) }
  const text = (r: RunResult) => (r.response ? Buffer.from(r.response.body, 'base64').toString() : null)
  expect(text(await runInSandbox(req('calm'), bridge, warm))).toBe('run 1')
  expect(text(await runInSandbox(req('calm'), bridge, warm))).toBe('run 2')
  // the warm sandbox runs the guest synchronously on this stack until its first await; the
  // stack left is enough for a run that does not nest
  expect(text(await onNearlyFullStack(() => runInSandbox(req('calm'), bridge, warm)))).toBe('run 3')
  const aborted = await onNearlyFullStack(() => runInSandbox(req('bomb'), bridge, warm))
  expect(aborted).toMatchObject({ outcome: 'exceeded_limit', error: { name: 'InternalError' } })
  expect(aborted.error!.message).toMatch(ABORTED)
  // the instance is not called again, not even to dispose of it: the next run loads a new one
  const next = await runInSandbox(req('calm'), bridge, warm)
  expect(next.outcome).toBe('ok')
  expect(text(next)).toBe('run 1')
})

test('nesting deeper than the stack in a sandbox thread: exceeded_limit, the sandbox replaced, the thread and a run beside it unharmed', async () => {
  const nesting = deployment('nesting', `if (mode === 'bomb') JSON.parse('['.repeat(1_000_000))`)
  expect((await invoke(nesting, 'calm')).text).toBe('run 1')
  expect((await invoke(nesting, 'calm')).text).toBe('run 2') // warm: the same sandbox

  // a run of another deployment waits on the same thread for its fetch while the abort happens
  let answer!: (a: FetchAnswer) => void
  const slow = deployment('slow', `if (mode === 'wait') return new Response('beside: ' + (await (await fetch('https://example.com/')).text()))`)
  const beside = invoke(slow, 'wait', () => new Promise(resolve => (answer = resolve)))
  await Bun.sleep(50)

  const aborted = await invoke(nesting, 'bomb')
  expect(aborted.outcome).toBe('exceeded_limit')
  expect(aborted.error).toMatchObject({ name: 'InternalError' })
  expect(aborted.error!.message).toMatch(STACK)

  answer({ status: 200, statusText: 'OK', headers: [], body: Buffer.from('still here').toString('base64'), url: 'https://example.com/', redirected: false })
  expect(await beside).toMatchObject({ outcome: 'ok', text: 'beside: still here' })
  // a fresh sandbox (the count starts again), on the same thread, which still runs
  expect(await invoke(nesting, 'calm')).toMatchObject({ outcome: 'ok', text: 'run 1' })
  expect((await invoke(nesting, 'calm')).text).toBe('run 2')
})

test('the same nesting while the module loads fails the load the same way, and the next load succeeds', async () => {
  const broken = { code: `JSON.parse('['.repeat(1_000_000))\nexport default { fetch() { return new Response('never') } }`, warmKey: 'broken-load' }
  const result = await invoke(broken, 'calm')
  expect(result.outcome).toBe('exceeded_limit')
  expect(result.error!.message).toMatch(STACK)
  expect((await invoke(deployment('after-load', ''), 'calm')).text).toBe('run 1')
})

test('a heap filled until QuickJS throws null is exceeded_memory with a message that says so, and the sandbox is replaced', async () => {
  const hungry = deployment('hungry', `if (mode === 'bomb') { const a = []; for (;;) a.push({ i: a.length }) }`)
  expect((await invoke(hungry, 'calm')).text).toBe('run 1')
  const full = await invoke(hungry, 'bomb')
  expect(full.outcome).toBe('exceeded_memory')
  expect(full.error).toMatchObject({ name: 'InternalError' })
  expect(full.error!.message).toMatch(/^out of memory: the heap reached the sandbox's 128 MiB limit/)
  expect(await invoke(hungry, 'calm')).toMatchObject({ outcome: 'ok', text: 'run 1' })
}, 30_000)

test('a guest that throws null itself, with room to spare, is an ordinary exception', async () => {
  const thrower = deployment('thrower', `if (mode === 'throw') throw null`)
  const result = await invoke(thrower, 'throw')
  expect(result).toMatchObject({ outcome: 'exception', error: { name: 'Error', message: 'uncaught null' } })
})
