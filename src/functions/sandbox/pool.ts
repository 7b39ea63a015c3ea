/**
 * The sandbox threads of this process. Sandboxes run in worker threads, never on the thread
 * that serves requests and jobs: a runaway guest costs a thread its CPU budget, not the
 * worker's event loop, and whatever kills a thread (a WebAssembly abort the engine could not
 * catch, memory exhaustion of the thread) ends only the runs on that thread, which report
 * `crashed` and are retried like any failed attempt. The pool replaces a dead thread at once.
 *
 * The wall clock is enforced twice: inside the sandbox (its interrupt handler and its waits),
 * and here, where a run still going a grace period after its wall clock ends its thread.
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

class SandboxThread {
  readonly runs = new Map<number, Run>()
  private worker: Worker
  dead = false

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

  start(runId: number, request: RunRequest, run: Run) {
    this.runs.set(runId, run)
    this.send({ type: 'run', runId, request })
  }

  /** Ends the thread; its runs end with `outcomeOf(run)`. */
  die(reason: string, outcomeOf: (runId: number) => RunResult['outcome'] = () => 'crashed') {
    if (this.dead) return
    this.dead = true
    this.worker.terminate()
    for (const [runId, run] of this.runs) {
      clearTimeout(run.timer)
      const outcome = outcomeOf(runId)
      run.resolve({
        outcome,
        cpuMs: 0,
        wallMs: Math.round(performance.now() - run.started),
        logs: [],
        logsTruncated: false,
        subrequests: 0,
        response: null,
        error: { name: 'Error', message: outcome === 'crashed' ? `${reason}; the run is retried` : reason, stack: null, line: null, column: null },
      })
    }
    this.runs.clear()
    this.onDeath(this)
  }
}

export class SandboxPool {
  private threads: SandboxThread[] = []
  private nextRun = 1

  constructor(private readonly size: number) {}

  private spawn(): SandboxThread {
    const thread = new SandboxThread(dead => {
      this.threads = this.threads.filter(t => t !== dead)
    })
    this.threads.push(thread)
    return thread
  }

  /** The least busy thread, starting threads up to the pool size. */
  private pick(): SandboxThread {
    const idle = this.threads.find(t => t.runs.size === 0)
    if (idle) return idle
    if (this.threads.length < this.size) return this.spawn()
    return this.threads.reduce((a, b) => (b.runs.size < a.runs.size ? b : a))
  }

  /** Runs a sandbox to its end; `fetch` serves the guest's fetches. Never rejects. */
  run(request: RunRequest, fetch: (arg: GuestFetch) => Promise<FetchAnswer>): Promise<RunResult> {
    const thread = this.pick()
    const runId = this.nextRun++
    return new Promise<RunResult>(resolve => {
      const timer = setTimeout(() => {
        // The sandbox did not stop itself: end its thread (the other runs on it are retried).
        thread.die(`wall clock exceeded ${request.limits.wallMs} ms`, id => (id === runId ? 'exceeded_wall_clock' : 'crashed'))
      }, request.limits.wallMs + WALL_GRACE_MS)
      thread.start(runId, request, { resolve, fetch, timer, started: performance.now() })
    })
  }

  /** Ends every thread at once, as a crash would: their runs report `crashed` (operators, tests). */
  killThreads(reason = 'the sandbox thread was killed') {
    for (const thread of [...this.threads]) thread.die(reason)
  }

  stop() {
    this.killThreads('the service is stopping')
  }
}

/** The process's pool, started on first use with FUNCTION_THREADS threads. */
export const sandboxPool = perProcess(ctx => new SandboxPool(ctx.config.FUNCTION_THREADS))
