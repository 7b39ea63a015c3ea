/**
 * One sandbox run in QuickJS: a fresh WebAssembly instance with its own `WebAssembly.Memory`
 * whose maximum is the memory cap (QuickJS's `setMemoryLimit` alone is not a hard cap), the
 * guest runtime of sandbox/runtime.js, the function's module, and, for an invocation, the
 * promise its `fetch(request, env)` returns, driven to completion by a loop that runs QuickJS's
 * jobs between host events (the sync variant: the asyncify one breaks on a second await).
 *
 * Limits: the interrupt handler stops the guest when its CPU time (time spent inside QuickJS)
 * or the wall clock runs out, or when a host-side limit (logs, subrequests) was crossed; host
 * waits are bounded by the wall clock here and by the pool outside. Every handle is disposed
 * in `finally`; if disposal itself fails the instance is simply dropped with its memory.
 *
 * This module runs inside a worker thread (thread.ts); `HostBridge.request` reaches the main
 * thread for the operations that need the service (fetch through the SSRF guard, API calls).
 */
import { readFileSync } from 'node:fs'
import { createHash, createHmac, randomBytes } from 'node:crypto'
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext, type QuickJSDeferredPromise, type QuickJSHandle, type QuickJSRuntime } from 'quickjs-emscripten-core'
import RELEASE_SYNC from '@jitl/quickjs-wasmfile-release-sync'
import type { Outcome, RunLimits, RunRequest, RunResult, LogLine, FetchAnswer } from './protocol'

const PAGE = 64 * 1024
const JOB_SLICE = 10_000
const RUNTIME_SOURCE = readFileSync(new URL('../../../sandbox/runtime.js', import.meta.url), 'utf8')
// Compiled once per thread; each run instantiates it with a memory of its own.
const compiled = new WebAssembly.Module(readFileSync(Bun.resolveSync('@jitl/quickjs-wasmfile-release-sync/wasm', import.meta.dir)))
export const MODULE_FILENAME = 'function.js'
// Emscripten prints an abort (a handle QuickJS still held when a stopped run is disposed) to
// stderr; the run already has its outcome and the instance is dropped, so say nothing.
const QUIET = { printErr: () => {} } as never

export interface HostBridge {
  /** an operation served by the main thread (fetch) */
  request(op: 'fetch', arg: unknown): Promise<FetchAnswer>
}

class LimitStop extends Error {}

/** What the interrupt handler and the host functions share about one run. */
class RunState {
  cpuMs = 0
  private sectionStart: number | null = null
  stop: Outcome | null = null
  stopReason = ''
  logs: LogLine[] = []
  logBytes = 0
  logsTruncated = false
  subrequests = 0
  readonly started = performance.now()

  constructor(readonly limits: RunLimits) {}

  wallMs() {
    return performance.now() - this.started
  }
  /** Runs guest code, counting its time as CPU time. */
  guest<T>(fn: () => T): T {
    this.sectionStart = performance.now()
    try {
      return fn()
    } finally {
      this.cpuMs += performance.now() - this.sectionStart
      this.sectionStart = null
    }
  }
  currentCpu() {
    return this.cpuMs + (this.sectionStart === null ? 0 : performance.now() - this.sectionStart)
  }
  halt(outcome: Outcome, reason: string) {
    if (!this.stop) {
      this.stop = outcome
      this.stopReason = reason
    }
  }
  shouldInterrupt(): boolean {
    if (this.stop) return true
    if (this.currentCpu() > this.limits.cpuMs) this.halt('exceeded_cpu', `CPU time exceeded ${this.limits.cpuMs} ms`)
    else if (this.wallMs() > this.limits.wallMs) this.halt('exceeded_wall_clock', `wall clock exceeded ${this.limits.wallMs} ms`)
    return this.stop !== null
  }
  log(level: string, message: string) {
    if (this.logsTruncated) return
    const bytes = Buffer.byteLength(message)
    if (this.logBytes + bytes > this.limits.logBytes) {
      this.logsTruncated = true
      this.halt('exceeded_limit', `logs exceeded ${this.limits.logBytes} bytes`)
      return
    }
    this.logBytes += bytes
    this.logs.push({ level, message, at: new Date().toISOString() })
  }
}

/** The host side of `__hostAsync` operations still running, for the driver loop. */
class PendingOps {
  private ops = new Map<number, { deferred: QuickJSDeferredPromise; cancel?: () => void }>()
  private settled: (() => void)[] = []
  private wake: (() => void) | null = null
  private nextId = 1

  constructor(private readonly vm: QuickJSContext) {}

  get size() {
    return this.ops.size
  }
  start(run: (id: number) => { promise: Promise<string>; cancel?: () => void }): QuickJSHandle {
    const id = this.nextId++
    const deferred = this.vm.newPromise()
    const { promise, cancel } = run(id)
    this.ops.set(id, { deferred, cancel })
    promise.then(
      value => this.settle(id, value),
      error => this.settle(id, JSON.stringify({ error: (error as Error).message ?? String(error) })),
    )
    const handle = deferred.handle
    this.vm.newNumber(id).consume(n => this.vm.setProp(handle, '__opId', n))
    return handle
  }
  private settle(id: number, value: string) {
    const op = this.ops.get(id)
    if (!op) return
    this.settled.push(() => {
      this.ops.delete(id)
      this.vm.newString(value).consume(v => op.deferred.resolve(v))
      op.deferred.dispose()
    })
    this.wake?.()
  }
  cancel(id: number) {
    const op = this.ops.get(id)
    if (!op) return
    op.cancel?.()
    this.ops.delete(id)
    op.deferred.dispose()
  }
  /** Resolves the guest promises of operations that finished; waits for one when none has. */
  async next(timeoutMs: number): Promise<boolean> {
    if (!this.settled.length) {
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, Math.max(0, timeoutMs))
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wake = null
    }
    const ready = this.settled.splice(0)
    for (const apply of ready) apply()
    return ready.length > 0
  }
  disposeAll() {
    for (const op of this.ops.values()) {
      op.cancel?.()
      op.deferred.dispose()
    }
    this.ops.clear()
    this.settled = []
  }
}

function installHost(vm: QuickJSContext, state: RunState, ops: PendingOps, bridge: HostBridge) {
  const sync = vm.newFunction('__host', (opHandle, argHandle) => {
    const op = vm.getString(opHandle)
    const arg = JSON.parse(vm.getString(argHandle))
    const out = (value: unknown) => vm.newString(JSON.stringify(value))
    switch (op) {
      case 'log':
        state.log(String(arg[0]), String(arg[1]))
        return vm.undefined
      case 'random':
        return out(randomBytes(Math.min(65536, Math.max(0, Number(arg) | 0))).toString('base64'))
      case 'digest':
        return out(createHash(arg[0]).update(Buffer.from(arg[1], 'base64')).digest('base64'))
      case 'hmac':
        return out(createHmac(arg[0], Buffer.from(arg[1], 'base64')).update(Buffer.from(arg[2], 'base64')).digest('base64'))
      case 'cancel':
        ops.cancel(Number(arg))
        return vm.undefined
      default:
        return vm.newError(`unknown host operation ${op}`)
    }
  })
  const async = vm.newFunction('__hostAsync', (opHandle, argHandle) => {
    const op = vm.getString(opHandle)
    const arg = JSON.parse(vm.getString(argHandle))
    if (op === 'sleep') {
      return ops.start(() => {
        let timer: ReturnType<typeof setTimeout>
        const promise = new Promise<string>(resolve => (timer = setTimeout(() => resolve('null'), Math.min(Number(arg) || 0, state.limits.wallMs))))
        return { promise, cancel: () => clearTimeout(timer) }
      })
    }
    if (op === 'fetch') {
      if (++state.subrequests > state.limits.subrequests) {
        state.halt('exceeded_limit', `more than ${state.limits.subrequests} subrequests`)
        return ops.start(() => ({ promise: Promise.resolve(JSON.stringify({ error: 'subrequest limit reached' })) }))
      }
      return ops.start(() => ({
        promise: bridge.request('fetch', arg).then(answer => {
          if (answer.error === undefined && answer.body && answer.body.length > (state.limits.responseBytes * 4) / 3 + 4) return JSON.stringify({ error: 'response too large' })
          return JSON.stringify(answer)
        }),
      }))
    }
    return vm.newError(`unknown host operation ${op}`)
  })
  vm.setProp(vm.global, '__host', sync)
  vm.setProp(vm.global, '__hostAsync', async)
  sync.dispose()
  async.dispose()
}

interface GuestError {
  name: string
  message: string
  stack: string | null
  line: number | null
  column: number | null
}

const plainError = (message: string): GuestError => ({ name: 'Error', message, stack: null, line: null, column: null })

function describeError(vm: QuickJSContext, handle: QuickJSHandle): GuestError {
  const dumped = vm.dump(handle) as Record<string, unknown> | string | null
  if (dumped && typeof dumped === 'object') {
    const stack = typeof dumped.stack === 'string' ? dumped.stack : null
    const at = stack ? new RegExp(`${MODULE_FILENAME}:(\\d+)(?::(\\d+))?`).exec(stack) : null
    return {
      name: String(dumped.name ?? 'Error'),
      message: String(dumped.message ?? ''),
      stack,
      line: at ? Number(at[1]) : typeof dumped.lineNumber === 'number' ? dumped.lineNumber : null,
      column: at?.[2] ? Number(at[2]) : null,
    }
  }
  return { name: 'Error', message: `uncaught ${typeof dumped === 'string' ? dumped : JSON.stringify(dumped)}`, stack: null, line: null, column: null }
}

/** How a guest error ends the run: limits QuickJS reports as errors get their own outcome. */
function classify(error: GuestError, state: RunState): Outcome {
  if (state.stop) return state.stop
  if (error.name === 'InternalError' && /out of memory/i.test(error.message)) return 'exceeded_memory'
  if (error.name === 'InternalError' && /stack overflow/i.test(error.message)) return 'exceeded_limit'
  if (error.name === 'RangeError' && /out of memory|invalid array buffer length|array buffer allocation/i.test(error.message)) return 'exceeded_memory'
  return 'exception'
}

async function freshRuntime(limits: RunLimits): Promise<{ runtime: QuickJSRuntime; memory: WebAssembly.Memory }> {
  const pages = Math.ceil(limits.memoryBytes / PAGE)
  // The variant's module declares 256 initial pages (16 MiB); the maximum is the hard cap.
  const memory = new WebAssembly.Memory({ initial: Math.min(256, pages), maximum: pages })
  const module = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmModule: compiled, wasmMemory: memory, emscriptenModule: QUIET }))
  const runtime = module.newRuntime()
  // QuickJS's own accounting stops most allocations cleanly (an `out of memory` error) a little
  // below the hard cap, which stops the rest.
  runtime.setMemoryLimit(limits.memoryBytes - 8 * 1024 * 1024)
  runtime.setMaxStackSize(limits.stackBytes)
  return { runtime, memory }
}

/** Runs a deploy check or an invocation to its end; never throws. */
export async function runInSandbox(req: RunRequest, bridge: HostBridge): Promise<RunResult> {
  const state = new RunState(req.limits)
  let memory: WebAssembly.Memory | undefined
  const result = (outcome: Outcome, extra: Partial<RunResult> = {}): RunResult => ({
    outcome,
    cpuMs: Math.round(state.cpuMs * 100) / 100,
    wallMs: Math.round(state.wallMs() * 100) / 100,
    logs: state.logs,
    logsTruncated: state.logsTruncated,
    subrequests: state.subrequests,
    response: null,
    error: null,
    ...extra,
  })
  let runtime: QuickJSRuntime | undefined
  let vm: QuickJSContext | undefined
  let ops: PendingOps | undefined
  const handles: QuickJSHandle[] = []
  try {
    ;({ runtime, memory } = await freshRuntime(req.limits))
    runtime.setInterruptHandler(() => state.shouldInterrupt())
    vm = runtime.newContext()
    ops = new PendingOps(vm)
    installHost(vm, state, ops, bridge)
    const own = vm
    const evalOrThrow = (code: string, filename: string, type: 'global' | 'module') => {
      const r = state.guest(() => own.evalCode(code, filename, { type }))
      if (r.error) {
        const err = describeError(own, r.error)
        r.error.dispose()
        throw Object.assign(new LimitStop(err.message), { guest: err })
      }
      handles.push(r.value)
      return r.value
    }
    const failure = (e: unknown) => {
      const guest = (e as { guest?: GuestError }).guest
      if (!guest) throw e
      return result(classify(guest, state), { error: guest })
    }
    try {
      evalOrThrow(RUNTIME_SOURCE, 'runtime.js', 'global')
    } catch (e) {
      return failure(e)
    }
    let namespace: QuickJSHandle
    try {
      const evaluated = evalOrThrow(req.code, MODULE_FILENAME, 'module')
      namespace = evaluated
      const first = vm.getPromiseState(evaluated)
      if (!(first.type === 'fulfilled' && first.notAPromise)) {
        // A promise of the namespace (module evaluation, top-level await): settle it first.
        if (first.type === 'fulfilled') first.value.dispose()
        if (first.type === 'rejected') first.error.dispose()
        const stuck = await drive(vm, runtime, state, ops, evaluated)
        if (stuck) return result(classify(stuck, state), { error: stuck })
        const s = vm.getPromiseState(evaluated)
        if (s.type === 'rejected') {
          const err = describeError(vm, s.error)
          s.error.dispose()
          return result(classify(err, state), { error: err })
        }
        if (s.type !== 'fulfilled') return result('exception', { error: plainError('the module did not finish evaluating') })
        handles.push(s.value)
        namespace = s.value
      }
    } catch (e) {
      return failure(e)
    }
    if (req.kind === 'check') {
      const check = vm.getProp(vm.global, '__check')
      handles.push(check)
      const r = state.guest(() => vm!.callFunction(check, vm!.undefined, namespace))
      if (r.error) {
        const err = describeError(vm, r.error)
        r.error.dispose()
        return result('exception', { error: err })
      }
      r.value.dispose()
      return result(state.stop ?? 'ok')
    }
    const invoke = vm.getProp(vm.global, '__invoke')
    handles.push(invoke)
    const args = [namespace, vm.newString(JSON.stringify(req.request)), vm.newString(JSON.stringify(req.env ?? {}))]
    handles.push(args[1]!, args[2]!)
    const call = state.guest(() => vm!.callFunction(invoke, vm!.undefined, ...args))
    if (call.error) {
      const err = describeError(vm, call.error)
      call.error.dispose()
      return result(classify(err, state), { error: err })
    }
    const promise = call.value
    handles.push(promise)
    const stuck = await drive(vm, runtime, state, ops, promise)
    if (stuck) return result(classify(stuck, state), { error: stuck })
    const final = vm.getPromiseState(promise)
    if (final.type === 'rejected') {
      const err = describeError(vm, final.error)
      final.error.dispose()
      return result(classify(err, state), { error: err })
    }
    if (final.type !== 'fulfilled') return result('exception', { error: plainError('the fetch handler did not settle') })
    const json = vm.getString(final.value)
    final.value.dispose()
    if (state.stop) return result(state.stop, { error: plainError(state.stopReason) })
    const response = JSON.parse(json) as { status: number; headers: [string, string][]; body: string }
    if (Buffer.byteLength(response.body, 'base64') > req.limits.responseBytes) {
      return result('exceeded_limit', { error: plainError(`response body larger than ${req.limits.responseBytes} bytes`) })
    }
    return result('ok', { response })
  } catch (error) {
    // A WebAssembly trap or an Emscripten abort: the instance is unusable. At the memory cap it
    // is the cap that ended the run.
    const atCap = memory ? memory.buffer.byteLength >= req.limits.memoryBytes - PAGE : false
    const message = (error as Error)?.message ?? String(error)
    return result(state.stop ?? (atCap || /memory/i.test(message) ? 'exceeded_memory' : 'crashed'), {
      error: { name: (error as Error)?.name ?? 'Error', message: `sandbox ${atCap ? 'reached its memory cap' : 'failed'}: ${message}`, stack: null, line: null, column: null },
    })
  } finally {
    try {
      ops?.disposeAll()
      for (const h of handles.reverse()) if (h.alive) h.dispose()
      vm?.dispose()
      runtime?.dispose()
    } catch {
      // a leaked handle aborts the instance: it is dropped with its memory either way
    }
  }
}

/**
 * Runs QuickJS's jobs until `promise` settles, waiting for host events in between. Returns an
 * error when it cannot settle: a limit stopped the guest, or nothing is left that could settle
 * it (a promise that never settles fails at once instead of holding the run to the wall clock).
 */
async function drive(vm: QuickJSContext, runtime: QuickJSRuntime, state: RunState, ops: PendingOps, promise: QuickJSHandle): Promise<GuestError | null> {
  const stopped = (): GuestError => (plainError(state.stopReason))
  for (;;) {
    // In slices, so that a guest that keeps queueing jobs (a microtask spin) meets its CPU budget.
    const jobs = state.guest(() => runtime.executePendingJobs(JOB_SLICE))
    if (jobs.error) {
      const err = describeError(vm, jobs.error)
      jobs.error.dispose()
      // An error in a job is the guest's own unhandled rejection unless a limit interrupted it.
      if (state.stop) return stopped()
      if (/interrupted/.test(err.message)) return stopped()
      return err
    }
    if (state.stop || state.shouldInterrupt()) return stopped()
    if (runtime.hasPendingJob()) continue
    const s = vm.getPromiseState(promise)
    if (s.type !== 'pending') {
      if (s.type === 'fulfilled' && !s.notAPromise) s.value.dispose()
      if (s.type === 'rejected') s.error.dispose()
      return null
    }
    if (ops.size === 0 && !runtime.hasPendingJob()) {
      return plainError('the promise can never settle: nothing it waits for is pending (no fetch, timer or job)')
    }
    const left = state.limits.wallMs - state.wallMs()
    if (left <= 0) {
      state.halt('exceeded_wall_clock', `wall clock exceeded ${state.limits.wallMs} ms`)
      return stopped()
    }
    await ops.next(left)
  }
}
