/**
 * The sandbox threads of this process. Sandboxes run in worker threads, never on the thread
 * that serves requests and jobs: a runaway guest costs a thread its CPU budget, not the
 * worker's event loop, and whatever kills a thread (a WebAssembly abort the engine could not
 * catch, memory exhaustion of the thread) ends only the runs on that thread, which report
 * `crashed` and are retried like any failed attempt. The pool replaces a dead thread at once.
 *
 * The wall clock is enforced twice: inside the sandbox (its interrupt handler and its waits),
 * and here, where a run still going a grace period after its wall clock ends its thread.
 *
 * Organizations share the threads fairly. A guest computing holds its whole thread (QuickJS
 * runs it synchronously and cannot be paused to let another run in), so a thread is lent to one
 * organization at a time: another tenant's runaway loop never sits in front of a run. An
 * organization holds at most `orgThreads` threads and has at most `orgRuns` runs in flight (each
 * may take its 128 MiB); its other runs wait in a queue of its own, and the queues are served
 * round robin whenever a thread or a slot frees. With more threads than one organization may
 * hold, another tenant's run always finds a thread of its own, and the operating system shares
 * the cores between the threads: the runaway costs it a share of a core, not the runaway's CPU
 * budget (docs/functions.md, "Sharing the threads").
 */
import { perProcess } from '../../context'
import type { FetchAnswer, FromThread, GuestFetch, RunRequest, RunResult, ToThread } from './protocol'

const WALL_GRACE_MS = 2_000

interface Run {
  resolve(result: RunResult): void
  fetch(arg: GuestFetch): Promise<FetchAnswer>
  timer: ReturnType<typeof setTimeout>
  started: number
}

/** A run waiting in its organization's queue for a thread or a slot. */
interface Queued {
  request: RunRequest
  fetch(arg: GuestFetch): Promise<FetchAnswer>
  resolve(result: RunResult): void
}

/** How the pool shares its threads among organizations (FUNCTION_ORG_THREADS, FUNCTION_ORG_CONCURRENCY). */
export interface PoolShares {
  /** threads one organization's runs may hold at once */
  orgThreads: number
  /** runs of one organization in flight at once; the rest wait in its queue */
  orgRuns: number
}

/** The tenant of runs that name none (tools, benchmarks): they share one queue. */
const UNATTRIBUTED = ''

/** The result of a run that ended without its sandbox saying how (its thread died, the service stopped). */
function endedResult(outcome: RunResult['outcome'], wallMs: number, message: string): RunResult {
  return {
    outcome,
    cpuMs: 0,
    wallMs,
    logs: [],
    logsTruncated: false,
    subrequests: 0,
    response: null,
    error: { name: 'Error', message, stack: null, line: null, column: null },
  }
}

class SandboxThread {
  readonly runs = new Map<number, Run>()
  private worker: Worker
  dead = false
  /** the organization whose runs are on this thread; null while it has none */
  owner: string | null = null
  /** the organization it was lent to last: its warm sandboxes are that organization's */
  lastOwner: string | null = null

  constructor(private readonly onDeath: (thread: SandboxThread) => void) {
    this.worker = new Worker(new URL('./thread.ts', import.meta.url).href)
    this.worker.unref()
    this.worker.onmessage = (event: MessageEvent<FromThread>) => this.receive(event.data)
    this.worker.addEventListener('error', () => this.die('the sandbox thread failed'))
    this.worker.addEventListener('close', () => this.die('the sandbox thread exited'))
  }

  private receive(message: FromThread) {
    if (message.type === 'done') {
      const run = this.runs.get(message.runId)
      if (!run) return
      clearTimeout(run.timer)
      this.runs.delete(message.runId)
      if (!this.runs.size) this.owner = null
      run.resolve(message.result)
    } else if (message.type === 'fetch') {
      const run = this.runs.get(message.runId)
      if (!run) return
      run.fetch(message.arg).then(
        value => this.send({ type: 'answer', runId: message.runId, callId: message.callId, value }),
        error => this.send({ type: 'answer', runId: message.runId, callId: message.callId, value: { error: (error as Error).message } }),
      )
    }
  }

  private send(message: ToThread) {
    if (!this.dead) this.worker.postMessage(message)
  }

  start(runId: number, owner: string, request: RunRequest, run: Run) {
    this.owner = this.lastOwner = owner
    this.runs.set(runId, run)
    this.send({ type: 'run', runId, request })
  }

  /** Ends the thread; its runs end with `outcomeOf(run)`. */
  die(reason: string, outcomeOf: (runId: number) => RunResult['outcome'] = () => 'crashed') {
    if (this.dead) return
    this.dead = true
    this.worker.terminate()
    const runs = [...this.runs]
    this.runs.clear()
    // out of the pool before its runs end: the runs their ends let start must not come here
    this.onDeath(this)
    for (const [runId, run] of runs) {
      clearTimeout(run.timer)
      const outcome = outcomeOf(runId)
      run.resolve(endedResult(outcome, Math.round(performance.now() - run.started), outcome === 'crashed' ? `${reason}; the run is retried` : reason))
    }
  }
}

export class SandboxPool {
  private threads: SandboxThread[] = []
  private nextRun = 1
  /** runs waiting to start, by organization; the map's order is the order of the round */
  private queues = new Map<string, Queued[]>()
  /** runs in flight, by organization */
  private inFlight = new Map<string, number>()
  private readonly shares: PoolShares

  /** Without `shares`, one organization may use every thread with no cap on its runs (tools, tests). */
  constructor(
    private readonly size: number,
    shares: Partial<PoolShares> = {},
  ) {
    this.shares = { orgThreads: shares.orgThreads ?? size, orgRuns: shares.orgRuns ?? Infinity }
  }

  private spawn(): SandboxThread {
    const thread = new SandboxThread(dead => {
      this.threads = this.threads.filter(t => t !== dead)
    })
    this.threads.push(thread)
    return thread
  }

  /**
   * The thread a run of `tenant` may start on now, or null when it must wait. Under its cap of
   * runs: a thread of no one while it holds fewer than its share, else the least busy of its own
   * threads. Of the threads of no one: the one it held last (its warm sandboxes are there), one no
   * one held, a new one up to the pool size, and only then one another organization held last
   * (whose warm sandboxes it would push out: a new thread is paid for once, that every time).
   */
  private threadFor(tenant: string): SandboxThread | null {
    if ((this.inFlight.get(tenant) ?? 0) >= this.shares.orgRuns) return null
    const own = this.threads.filter(t => t.owner === tenant)
    if (own.length < this.shares.orgThreads) {
      const free = this.threads.filter(t => t.owner === null)
      const thread =
        free.find(t => t.lastOwner === tenant) ?? free.find(t => t.lastOwner === null) ?? (this.threads.length < this.size ? this.spawn() : free[0]) ?? null
      if (thread) return thread
    }
    return own.length ? own.reduce((a, b) => (b.runs.size < a.runs.size ? b : a)) : null
  }

  /** Starts queued runs while any can start, taking the organizations in turn (round robin). */
  private dispatch() {
    for (let started = true; started; ) {
      started = false
      for (const tenant of [...this.queues.keys()]) {
        const thread = this.threadFor(tenant)
        if (!thread) continue
        const queue = this.queues.get(tenant)!
        const next = queue.shift()!
        // served: to the back of the round
        this.queues.delete(tenant)
        if (queue.length) this.queues.set(tenant, queue)
        this.start(thread, tenant, next)
        started = true
      }
    }
  }

  private start(thread: SandboxThread, tenant: string, queued: Queued) {
    const runId = this.nextRun++
    const { request } = queued
    this.inFlight.set(tenant, (this.inFlight.get(tenant) ?? 0) + 1)
    const timer = setTimeout(() => {
      // The sandbox did not stop itself: end its thread (the other runs on it, of the same organization, are retried).
      thread.die(`wall clock exceeded ${request.limits.wallMs} ms`, id => (id === runId ? 'exceeded_wall_clock' : 'crashed'))
    }, request.limits.wallMs + WALL_GRACE_MS)
    const resolve = (result: RunResult) => {
      this.ended(tenant)
      queued.resolve(result)
    }
    thread.start(runId, tenant, request, { resolve, fetch: queued.fetch, timer, started: performance.now() })
  }

  private ended(tenant: string) {
    const left = (this.inFlight.get(tenant) ?? 1) - 1
    if (left) this.inFlight.set(tenant, left)
    else this.inFlight.delete(tenant)
    this.dispatch()
  }

  /**
   * Runs a sandbox to its end for organization `tenant`, as soon as the organization's share
   * allows; `fetch` serves the guest's fetches. Never rejects.
   */
  run(request: RunRequest, fetch: (arg: GuestFetch) => Promise<FetchAnswer>, tenant = UNATTRIBUTED): Promise<RunResult> {
    return new Promise<RunResult>(resolve => {
      const queue = this.queues.get(tenant) ?? []
      queue.push({ request, fetch, resolve })
      this.queues.set(tenant, queue)
      this.dispatch()
    })
  }

  /** An organization's runs in flight and waiting (tests, operators). */
  load(tenant: string): { running: number; waiting: number } {
    return { running: this.inFlight.get(tenant) ?? 0, waiting: this.queues.get(tenant)?.length ?? 0 }
  }

  /** Ends every thread at once, as a crash would: their runs report `crashed` (operators, tests). */
  killThreads(reason = 'the sandbox thread was killed') {
    for (const thread of [...this.threads]) thread.die(reason)
  }

  /** Ends the runs still waiting, then every thread. */
  stop() {
    const waiting = [...this.queues.values()].flat()
    this.queues.clear()
    for (const queued of waiting) queued.resolve(endedResult('crashed', 0, 'the service is stopping; the run is retried'))
    this.killThreads('the service is stopping')
  }
}

/** The process's pool: FUNCTION_THREADS threads at most, started as runs need them, shared per FUNCTION_ORG_THREADS and FUNCTION_ORG_CONCURRENCY. */
export const sandboxPool = perProcess(
  ctx => new SandboxPool(ctx.config.FUNCTION_THREADS, { orgThreads: ctx.config.FUNCTION_ORG_THREADS, orgRuns: ctx.config.FUNCTION_ORG_CONCURRENCY }),
)
