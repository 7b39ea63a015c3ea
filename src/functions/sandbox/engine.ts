/**
 * Sandboxes in QuickJS. A sandbox is a WebAssembly instance with its own `WebAssembly.Memory`
 * whose maximum is the memory cap (QuickJS's `setMemoryLimit` alone is not a hard cap), the
 * guest runtime of sandbox/runtime.js and one function's module. An invocation calls the
 * module's `fetch(request, env)` and drives the promise it returns to completion with a loop
 * that runs QuickJS's jobs between host events (the sync variant: the asyncify one breaks on a
 * second await). A sandbox whose invocation ended cleanly may serve the next invocation of the
 * same deployment (WarmSandboxes); any other ending disposes it.
 *
 * Limits: the interrupt handler stops the guest when its CPU time (the thread's CPU time inside
 * QuickJS) or the wall clock runs out, or when a host-side limit (logs, subrequests) was
 * crossed; host waits are bounded by the wall clock here and by the pool outside. Every handle
 * is disposed in `finally`; if disposal itself fails the instance is dropped with its memory.
 *
 * This module runs inside a worker thread (thread.ts); `HostBridge.request` reaches the main
 * thread for the operations that need the service (fetch through the SSRF guard, API calls).
 */
import { readFileSync } from 'node:fs'
import { createHash, createHmac, randomBytes } from 'node:crypto'
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSDeferredPromise,
  type QuickJSHandle,
  type QuickJSRuntime,
} from 'quickjs-emscripten-core'
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

/**
 * CPU time of this thread, in ms: guest code runs synchronously on it, so the difference across
 * a guest section is that section's CPU time, however busy the machine (wall time would charge
 * a guest for the time its thread waited for a core).
 */
const threadCpu = (process as { threadCpuUsage?: () => { user: number; system: number } }).threadCpuUsage
const threadCpuMs = threadCpu
  ? () => {
      const u = threadCpu()
      return (u.user + u.system) / 1000
    }
  : () => performance.now()

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
  /** Runs guest code, counting the thread's CPU time meanwhile as the run's. */
  guest<T>(fn: () => T): T {
    this.sectionStart = threadCpuMs()
    try {
      return fn()
    } finally {
      this.cpuMs += threadCpuMs() - this.sectionStart
      this.sectionStart = null
    }
  }
  currentCpu() {
    return this.cpuMs + (this.sectionStart === null ? 0 : threadCpuMs() - this.sectionStart)
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

function installHost(vm: QuickJSContext, current: () => { state: RunState; bridge: HostBridge }, ops: PendingOps) {
  const sync = vm.newFunction('__host', (opHandle, argHandle) => {
    const { state } = current()
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
      case 'response_limit':
        return vm.newNumber(state.limits.responseBytes)
      case 'response_too_large':
        state.halt('exceeded_limit', `response body of ${Number(arg)} bytes is larger than ${state.limits.responseBytes}`)
        return vm.undefined
      default:
        return vm.newError(`unknown host operation ${op}`)
    }
  })
  const async = vm.newFunction('__hostAsync', (opHandle, argHandle) => {
    const { state, bridge } = current()
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
          if (answer.error === undefined && answer.body && answer.body.length > (state.limits.responseBytes * 4) / 3 + 4)
            return JSON.stringify({ error: 'response too large' })
          return JSON.stringify(answer)
        }),
      }))
    }
    return vm.newError(`unknown host operation ${op}`)
  })
  const bytes = vm.newFunction('__bytes', (opHandle, valueHandle, offsetHandle, lengthHandle) => {
    const op = vm.getString(opHandle)
    switch (op) {
      case 'base64_encode':
        return vm.newString(readBytes(vm, valueHandle, offsetHandle, lengthHandle).toString('base64'))
      case 'utf8_decode': {
        const text = UTF8.decode(readBytes(vm, valueHandle, offsetHandle, lengthHandle))
        // a NUL would end the string on its way in: the guest decodes that text itself
        return text.includes('\0') ? vm.undefined : vm.newString(text)
      }
      case 'utf8_encode':
        return vm.newArrayBuffer(ownBuffer(Buffer.from(vm.getString(valueHandle), 'utf8')))
      case 'base64_decode': {
        // forgiving-base64: ASCII whitespace ignored, padding optional
        const clean = vm
          .getString(valueHandle)
          .replace(/[\t\n\f\r ]/g, '')
          .replace(/=+$/, '')
        if (/[^A-Za-z0-9+/]/.test(clean) || clean.length % 4 === 1) return vm.undefined
        return vm.newArrayBuffer(ownBuffer(Buffer.from(clean, 'base64')))
      }
      default:
        return vm.newError(`unknown byte operation ${op}`)
    }
  })
  vm.setProp(vm.global, '__host', sync)
  vm.setProp(vm.global, '__hostAsync', async)
  vm.setProp(vm.global, '__bytes', bytes)
  sync.dispose()
  async.dispose()
  bytes.dispose()
}

const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true })

/** The bytes of `b` as an ArrayBuffer of their own (a small Buffer is a slice of a shared pool). */
const ownBuffer = (b: Buffer): ArrayBuffer =>
  b.byteOffset === 0 && b.byteLength === b.buffer.byteLength
    ? (b.buffer as ArrayBuffer)
    : (b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer)

/** A copy of `length` bytes at `offset` of a guest ArrayBuffer. */
function readBytes(vm: QuickJSContext, buffer: QuickJSHandle, offsetHandle: QuickJSHandle, lengthHandle: QuickJSHandle): Buffer {
  const view = vm.getArrayBuffer(buffer)
  try {
    const offset = Math.max(0, Math.min(vm.getNumber(offsetHandle) | 0, view.value.length))
    const length = Math.max(0, Math.min(vm.getNumber(lengthHandle) | 0, view.value.length - offset))
    return Buffer.from(view.value.subarray(offset, offset + length))
  } finally {
    view.dispose()
  }
}

interface GuestError {
  name: string
  message: string
  stack: string | null
  line: number | null
  column: number | null
  /** the guest threw something that is not an object (`throw null`, or QuickJS out of memory) */
  notAnError?: boolean
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
  return {
    name: 'Error',
    message: `uncaught ${typeof dumped === 'string' ? dumped : JSON.stringify(dumped)}`,
    stack: null,
    line: null,
    column: null,
    notAnError: true,
  }
}

/** QuickJS's own limit is this far below the hard cap (see freshRuntime). */
const QUICKJS_HEADROOM = 8 * 1024 * 1024

/**
 * Whether the instance's memory has grown to QuickJS's own limit. It never shrinks, so this says
 * that the heap was full at some point: with a thrown value that is not an error, the point
 * where QuickJS could not even allocate the `out of memory` error (it throws null then).
 */
const heapFull = (memory: WebAssembly.Memory | null, limits: RunLimits) => (memory ? memory.buffer.byteLength >= limits.memoryBytes - QUICKJS_HEADROOM : false)

/** How a guest error ends the run: limits QuickJS reports as errors get their own outcome. */
function classify(error: GuestError, state: RunState, memory: WebAssembly.Memory | null): Outcome {
  if (state.stop) return state.stop
  if (error.notAnError && heapFull(memory, state.limits)) {
    error.name = 'InternalError'
    error.message = `out of memory: the heap reached the sandbox's ${state.limits.memoryBytes >> 20} MiB limit, with no room left even for an error (${error.message})`
    return 'exceeded_memory'
  }
  if (error.name === 'InternalError' && /out of memory/i.test(error.message)) return 'exceeded_memory'
  // QuickJS's stack check: an InternalError, or a SyntaxError from its JSON and RegExp parsers
  if (error.name === 'InternalError' && /stack overflow/i.test(error.message)) return 'exceeded_limit'
  if (error.name === 'SyntaxError' && /^stack overflow$/i.test(error.message)) return 'exceeded_limit'
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

function resultOf(state: RunState, outcome: Outcome, extra: Partial<RunResult> = {}): RunResult {
  return {
    outcome,
    cpuMs: Math.round(state.cpuMs * 100) / 100,
    wallMs: Math.round(state.wallMs() * 100) / 100,
    logs: state.logs,
    logsTruncated: state.logsTruncated,
    subrequests: state.subrequests,
    response: null,
    error: null,
    ...extra,
  }
}

/** The bridge of a prepared instance that no run has taken yet. */
const NO_BRIDGE: HostBridge = { request: async () => ({ error: 'no run is using this sandbox' }) }

/** The guest's module failed to load: its error, and how that ended the run. */
class GuestFailure extends Error {
  outcome: Outcome = 'exception'
  constructor(readonly guest: GuestError) {
    super(guest.message)
  }
}

/** A trap or an abort of the instance while a module was loading: the run's result. */
class SandboxCrash extends Error {
  constructor(readonly result: RunResult) {
    super(result.error?.message)
  }
}

/**
 * One QuickJS instance with the guest runtime and a function's module loaded. A sandbox whose
 * invocation ended cleanly (an answer or the guest's own exception, nothing left pending) may
 * serve the next invocation of the same deployment (warm); any limit, crash or leftover work
 * disposes it. Its memory cap holds for its whole life, across those invocations.
 */
export class Sandbox {
  private state: RunState
  private bridge: HostBridge
  private readonly handles: QuickJSHandle[] = []
  private namespace: QuickJSHandle | null = null
  private clean = false
  private broken = false
  uses = 0
  idleSince = 0

  private constructor(
    private readonly runtime: QuickJSRuntime,
    private readonly vm: QuickJSContext,
    private readonly ops: PendingOps,
    private readonly memory: WebAssembly.Memory,
    state: RunState,
    bridge: HostBridge,
    private readonly limits: RunLimits,
  ) {
    this.state = state
    this.bridge = bridge
  }

  /**
   * A fresh instance with its own capped memory and the guest runtime evaluated, no module yet:
   * the part of a cold start that is the same for every function (about four fifths of it).
   */
  static async prepare(limits: RunLimits): Promise<Sandbox> {
    const { runtime, memory } = await freshRuntime(limits)
    const vm = runtime.newContext()
    const ops = new PendingOps(vm)
    const sandbox = new Sandbox(runtime, vm, ops, memory, new RunState(limits), NO_BRIDGE, limits)
    try {
      runtime.setInterruptHandler(() => sandbox.state.shouldInterrupt())
      installHost(vm, () => ({ state: sandbox.state, bridge: sandbox.bridge }), ops)
      sandbox.handles.push(sandbox.eval(RUNTIME_SOURCE, 'runtime.js', 'global'))
      return sandbox
    } catch (error) {
      if (!(error instanceof GuestFailure)) sandbox.broken = true
      sandbox.dispose()
      throw error
    }
  }

  /** Whether this prepared instance was made for `limits` (its memory cap and stack). */
  fits(limits: RunLimits) {
    return this.limits.memoryBytes === limits.memoryBytes && this.limits.stackBytes === limits.stackBytes && !this.namespace && !this.broken
  }

  /** Evaluates the function's module in this prepared instance; its time counts against `state`. */
  async load(code: string, state: RunState, bridge: HostBridge): Promise<void> {
    const { vm, runtime, memory } = this
    this.state = state
    this.bridge = bridge
    try {
      const evaluated = this.eval(code, MODULE_FILENAME, 'module')
      this.handles.push(evaluated)
      this.namespace = evaluated
      const first = vm.getPromiseState(evaluated)
      if (!(first.type === 'fulfilled' && first.notAPromise)) {
        // A promise of the namespace (module evaluation, top-level await): settle it first.
        if (first.type === 'fulfilled') first.value.dispose()
        if (first.type === 'rejected') first.error.dispose()
        const stuck = await drive(vm, runtime, state, this.ops, evaluated)
        if (stuck) throw new GuestFailure(stuck)
        const settled = vm.getPromiseState(evaluated)
        if (settled.type === 'rejected') {
          const err = describeError(vm, settled.error)
          settled.error.dispose()
          throw new GuestFailure(err)
        }
        if (settled.type !== 'fulfilled') throw new GuestFailure(plainError('the module did not finish evaluating'))
        this.handles.push(settled.value)
        this.namespace = settled.value
      }
    } catch (error) {
      if (!(error instanceof GuestFailure)) throw new SandboxCrash(this.failure(error, this.limits))
      error.outcome = classify(error.guest, state, memory)
      this.dispose()
      throw error
    }
  }

  private eval(code: string, filename: string, type: 'global' | 'module'): QuickJSHandle {
    const r = this.state.guest(() => this.vm.evalCode(code, filename, { type }))
    if (r.error) {
      const err = describeError(this.vm, r.error)
      r.error.dispose()
      throw new GuestFailure(err)
    }
    return r.value
  }

  /** Calls a global of the runtime with the namespace and string arguments. */
  private call(name: string, ...strings: string[]) {
    const fn = this.vm.getProp(this.vm.global, name)
    const args = strings.map(v => this.vm.newString(v))
    try {
      return this.state.guest(() => this.vm.callFunction(fn, this.vm.undefined, this.namespace!, ...args))
    } finally {
      for (const a of args) a.dispose()
      fn.dispose()
    }
  }

  /** The deploy check: the default export must have a fetch method. */
  check(): RunResult {
    const r = this.call('__check')
    if (r.error) {
      const err = describeError(this.vm, r.error)
      r.error.dispose()
      return resultOf(this.state, 'exception', { error: err })
    }
    r.value.dispose()
    return resultOf(this.state, this.state.stop ?? 'ok')
  }

  /** One invocation; `state` is the invocation's (a warm sandbox gets a new one each time). */
  async invoke(req: RunRequest, state: RunState, bridge: HostBridge): Promise<RunResult> {
    this.state = state
    this.bridge = bridge
    this.uses++
    this.clean = false
    const call = this.call('__invoke', JSON.stringify(req.request), JSON.stringify(req.env ?? {}))
    if (call.error) {
      const err = describeError(this.vm, call.error)
      call.error.dispose()
      return this.finish(resultOf(state, classify(err, state, this.memory), { error: err }))
    }
    const promise = call.value
    try {
      const stuck = await drive(this.vm, this.runtime, state, this.ops, promise)
      if (stuck) return this.finish(resultOf(state, classify(stuck, state, this.memory), { error: stuck }))
      const final = this.vm.getPromiseState(promise)
      if (final.type === 'rejected') {
        const err = describeError(this.vm, final.error)
        final.error.dispose()
        return this.finish(resultOf(state, classify(err, state, this.memory), { error: err }))
      }
      if (final.type !== 'fulfilled') return this.finish(resultOf(state, 'exception', { error: plainError('the fetch handler did not settle') }))
      const json = this.vm.getString(final.value)
      final.value.dispose()
      if (state.stop) return this.finish(resultOf(state, state.stop, { error: plainError(state.stopReason) }))
      const response = JSON.parse(json) as { status: number; headers: [string, string][]; body: string }
      if (Buffer.byteLength(response.body, 'base64') > req.limits.responseBytes) {
        return this.finish(resultOf(state, 'exceeded_limit', { error: plainError(`response body larger than ${req.limits.responseBytes} bytes`) }))
      }
      return this.finish(resultOf(state, 'ok', { response }))
    } finally {
      promise.dispose()
    }
  }

  /** Notes whether the sandbox may serve another invocation. */
  private finish(result: RunResult): RunResult {
    this.clean = (result.outcome === 'ok' || result.outcome === 'exception') && !this.state.stop && this.ops.size === 0 && !this.runtime.hasPendingJob()
    return result
  }

  get reusable(): boolean {
    return this.clean
  }

  /**
   * The outcome of a trap or abort inside this instance. The instance is never called again, not
   * even to dispose of it: its state is whatever the trap left. It is dropped with its memory.
   */
  failure(error: unknown, limits: RunLimits): RunResult {
    this.broken = true
    return crashResult(this.state, error, this.memory, limits)
  }

  dispose() {
    if (this.broken) return
    try {
      this.ops.disposeAll()
      for (const h of this.handles.reverse()) if (h.alive) h.dispose()
      this.vm.dispose()
      this.runtime.dispose()
    } catch {
      // a leaked handle aborts the instance: it is dropped with its memory either way
    }
  }
}

function crashResult(state: RunState, error: unknown, memory: WebAssembly.Memory | null, limits: RunLimits): RunResult {
  // A WebAssembly trap or an Emscripten abort: the instance is unusable. At the memory cap it is
  // the cap that ended the run.
  const atCap = memory ? memory.buffer.byteLength >= limits.memoryBytes - PAGE : false
  const message = (error as Error)?.message ?? String(error)
  if (!state.stop && error instanceof RangeError && /call stack/i.test(message)) {
    // The guest nested deeper (JSON, eval, a regular expression) than the thread's native stack
    // holds before QuickJS's own stack check: a stack limit, which aborted the instance.
    return resultOf(state, 'exceeded_limit', {
      error: {
        name: 'InternalError',
        message: `stack overflow: the code nested too deep for the sandbox, whose engine ran out of native stack (${message}); the sandbox was discarded`,
        stack: null,
        line: null,
        column: null,
      },
    })
  }
  return resultOf(state, state.stop ?? (atCap || /memory/i.test(message) ? 'exceeded_memory' : 'crashed'), {
    error: {
      name: (error as Error)?.name ?? 'Error',
      message: `sandbox ${atCap ? 'reached its memory cap' : 'failed'}: ${message}`,
      stack: null,
      line: null,
      column: null,
    },
  })
}

/**
 * Idle warm sandboxes of one thread, by deployment (the oldest go first), and one spare: a
 * prepared instance with no module yet, which the next cold start takes instead of building
 * one while its run waits. A new spare is prepared on a timer right after a cold start took
 * the last one, so it is built between the tasks of the runs on the thread, not before them.
 */
export class WarmSandboxes {
  private idle = new Map<string, Sandbox[]>()
  private count = 0
  private spare: Promise<Sandbox | null> | null = null
  private spareWanted = false

  constructor(
    private readonly max = 8,
    private readonly maxIdleMs = 60_000,
    private readonly maxUses = 1000,
  ) {}

  take(key: string): Sandbox | undefined {
    const list = this.idle.get(key)
    const sandbox = list?.pop()
    if (!sandbox) return undefined
    this.count--
    if (!list!.length) this.idle.delete(key)
    if (performance.now() - sandbox.idleSince > this.maxIdleMs) {
      sandbox.dispose()
      return undefined
    }
    return sandbox
  }

  give(key: string, sandbox: Sandbox) {
    if (!sandbox.reusable || sandbox.uses >= this.maxUses) return disposeLater(sandbox)
    sandbox.idleSince = performance.now()
    // a deployment that was replaced leaves its sandboxes to age out; the oldest overall goes first
    while (this.count >= this.max) this.evictOldest()
    const list = this.idle.get(key) ?? []
    list.push(sandbox)
    this.idle.set(key, list)
    this.count++
  }

  /** The spare instance if it is ready or being prepared (and made for `limits`), else null. */
  async takeSpare(limits: RunLimits): Promise<Sandbox | null> {
    const spare = this.spare
    this.spare = null
    const sandbox = spare ? await spare : null
    if (sandbox && !sandbox.fits(limits)) {
      sandbox.dispose()
      return null
    }
    return sandbox
  }

  /** Prepares a spare for `limits` on a timer, unless one is ready or under way. */
  replenish(limits: RunLimits) {
    if (this.spare || this.spareWanted) return
    this.spareWanted = true
    setTimeout(() => {
      this.spareWanted = false
      if (!this.spare) this.spare = Sandbox.prepare(limits).catch(() => null)
    }, 0)
  }

  private evictOldest() {
    let oldestKey: string | null = null
    let oldestIndex = 0
    let oldestSince = Infinity
    for (const [key, list] of this.idle) {
      for (let i = 0; i < list.length; i++) {
        if (list[i]!.idleSince < oldestSince) [oldestKey, oldestIndex, oldestSince] = [key, i, list[i]!.idleSince]
      }
    }
    if (oldestKey === null) return
    const list = this.idle.get(oldestKey)!
    list.splice(oldestIndex, 1)[0]!.dispose()
    if (!list.length) this.idle.delete(oldestKey)
    this.count--
  }
}

/** Frees a sandbox on a timer: the run's result goes back first (freeing one takes about 0.3 ms). */
function disposeLater(sandbox: Sandbox) {
  setTimeout(() => sandbox.dispose(), 0)
}

/**
 * Runs a deploy check or an invocation to its end; never throws. An invocation with a `warmKey`
 * (its deployment) takes an idle sandbox of that deployment from `warm` when there is one, and
 * gives its sandbox back when it ended cleanly.
 */
export async function runInSandbox(req: RunRequest, bridge: HostBridge, warm?: WarmSandboxes): Promise<RunResult> {
  const state = new RunState(req.limits)
  let sandbox = req.kind === 'invoke' && req.warmKey ? warm?.take(req.warmKey) : undefined
  try {
    if (!sandbox) {
      try {
        const fresh = (await warm?.takeSpare(req.limits)) ?? (await Sandbox.prepare(req.limits))
        await fresh.load(req.code, state, bridge)
        sandbox = fresh
      } catch (error) {
        if (error instanceof GuestFailure) return resultOf(state, error.outcome, { error: error.guest })
        if (error instanceof SandboxCrash) return error.result
        return crashResult(state, error, null, req.limits)
      } finally {
        warm?.replenish(req.limits)
      }
    }
    if (req.kind === 'check') return sandbox.check()
    const result = await sandbox.invoke(req, state, bridge)
    if (warm && req.warmKey) {
      warm.give(req.warmKey, sandbox)
      sandbox = undefined
    }
    return result
  } catch (error) {
    return sandbox ? sandbox.failure(error, req.limits) : crashResult(state, error, null, req.limits)
  } finally {
    if (sandbox) disposeLater(sandbox)
  }
}

/**
 * Runs QuickJS's jobs until `promise` settles, waiting for host events in between. Returns an
 * error when it cannot settle: a limit stopped the guest, or nothing is left that could settle
 * it (a promise that never settles fails at once instead of holding the run to the wall clock).
 */
async function drive(vm: QuickJSContext, runtime: QuickJSRuntime, state: RunState, ops: PendingOps, promise: QuickJSHandle): Promise<GuestError | null> {
  const stopped = (): GuestError => plainError(state.stopReason)
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
