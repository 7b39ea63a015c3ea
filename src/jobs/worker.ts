/**
 * The worker role: claims due jobs, runs them with bounded concurrency, records each outcome,
 * and logs one line per attempt. It sleeps until NOTIFY on the jobs channel or its poll timer,
 * whichever comes first, so a lost notification only delays work by one poll; a listening
 * connection that drops is connected again (src/db/listener.ts). Every third of
 * JOB_LEASE_SECONDS its heartbeat renews the leases of all the jobs it holds and frees those
 * of dead workers (queue.ts, docs/jobs.md).
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { log } from '../log'
import type { JobKind } from './kind'
import { keepLeases } from './lease'
import { claim, enqueue, JOBS_CHANNEL, releaseClaimed, type Job } from './queue'
import { runJob } from './run'
import { listenForever } from '../db/listener'

export interface WorkerOptions {
  concurrency?: number
  pollMs?: number
  /** listen for NOTIFY (needs a second connection; the embedded database has only one) */
  listen?: boolean
  /** the kinds this worker claims and runs (the service's are listed in src/job-kinds.ts) */
  kinds: JobKind[]
  /** the time jobs are due against; default the database clock (tests pass a controllable one) */
  clock?: () => Date
  /** default JOB_LEASE_SECONDS */
  leaseSeconds?: number
}

/**
 * Jobs run at once. Most jobs wait on the network (a webhook receiver, an SMTP relay), and a
 * worker claiming for many slots claims and completes in larger batches: in a backlog of
 * webhook deliveries, 32 slots took about a third of the CPU per delivery of 8.
 */
export const DEFAULT_CONCURRENCY = 32

export interface Worker {
  id: string
  /** wakes the loop now (after an enqueue in this process) */
  wake(): void
  /** stops claiming, waits for running jobs up to `graceMs`, hands back the rest */
  stop(graceMs: number): Promise<void>
  /** resolves when no job is running and none is due (tests) */
  drain(): Promise<void>
}

export async function startWorker(ctx: AppContext, opts: WorkerOptions): Promise<Worker> {
  const id = `worker_${randomUUIDv7()}`
  const kinds = new Map(opts.kinds.map(k => [k.kind, k]))
  const concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY
  const pollMs = opts.pollMs ?? 1000
  const leaseSeconds = opts.leaseSeconds ?? ctx.config.JOB_LEASE_SECONDS
  const running = new Set<Promise<void>>()
  let stopping = false
  // A wake-up is a flag as well as a resolver: one that arrives while the loop is claiming (a
  // NOTIFY for a job committed after the claim's snapshot, a job finishing) must make the loop
  // claim again instead of sleeping a whole poll interval.
  let woken = false
  let polled = false
  // The last claim filled every free slot, so more jobs may be due: a slot that frees claims again.
  let backlog = false
  // a slot freed since the loop last looked
  let freed = false
  // when the loop claims anyway, for jobs that became due with no notification (retries, run_at)
  let pollAt = 0
  let wakeUp: (() => void) | undefined
  let idle: (() => void)[] = []

  /** New jobs may be due (a NOTIFY, an enqueue in this process, jobs freed from a dead worker). */
  const wake = () => {
    woken = true
    wakeUp?.()
  }
  // A NOTIFY sent while the listening connection was down is lost: listening again wakes the loop.
  const listener = opts.listen ? await listenForever(ctx.sql, [JOBS_CHANNEL], wake, wake).catch(() => undefined) : undefined

  function track(p: Promise<void>) {
    const tracked = p.finally(() => {
      running.delete(tracked)
      // a free slot: the loop claims for it if jobs are waiting (or answers drain() when idle)
      freed = true
      wakeUp?.()
    })
    running.add(tracked)
  }

  /** Runs the claimed jobs, each kind's together through its `handleMany` when it has one. */
  function start(jobs: Job[]) {
    for (const kind of new Set(jobs.map(job => kinds.get(job.kind)!))) {
      const group = jobs.filter(job => job.kind === kind.kind)
      // A handler that throws before it returns its promises fails each job's attempt, not the loop.
      let attempts: Promise<void>[] | undefined
      try {
        attempts = kind.handleMany?.(ctx, group)
      } catch (error) {
        attempts = group.map(() => Promise.reject(error))
      }
      for (const [i, job] of group.entries()) track(runJob(ctx, kind, job, attempts?.[i]))
    }
  }

  async function loop() {
    while (!stopping) {
      // Drain waiters are answered only by a claim that began after they asked.
      const waiting = idle
      idle = []
      // Slots are filled as they free while jobs are waiting (the last claim filled every slot)
      // or new ones may be due; a slot freed with nothing waiting costs no claim. Slots that
      // free while a claim is under way are claimed for together by the next one.
      const free = concurrency - running.size
      const worthClaiming = free > 0 && (woken || polled || backlog || running.size === 0)
      freed = false
      let jobs: Job[] = []
      if (worthClaiming) {
        woken = false
        polled = false
        pollAt = performance.now() + pollMs
        jobs = await claim(ctx.sql, id, [...kinds.keys()], free, opts.clock?.() ?? null).catch(error => (log.error('claim failed', { error }), [] as Job[]))
        backlog = jobs.length === free
        start(jobs)
      }
      if (jobs.length === 0 && running.size === 0) for (const resolve of waiting) resolve()
      else idle.push(...waiting)
      // A job committed or a slot freed (with jobs waiting) during the claim: claim again now.
      if (running.size < concurrency && (woken || (freed && (backlog || running.size === 0)))) continue
      await new Promise<void>(resolve => {
        // the poll is due at pollAt; once due, it waits for a free slot
        const timer = polled
          ? undefined
          : setTimeout(
              () => {
                polled = true
                resolve()
              },
              Math.max(0, pollAt - performance.now()),
            )
        wakeUp = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      wakeUp = undefined
    }
  }

  /** Enqueues a periodic kind's next run, unless one is pending already (here or in another worker). */
  const schedule = (kind: JobKind) => ctx.sql.begin(tx => enqueue(tx, kind.kind, {}, { dedupeKey: kind.kind })).catch(() => {})
  const periodic = opts.kinds.filter(k => k.everyMs)
  await Promise.all(periodic.map(schedule))
  const timers = periodic.map(k => setInterval(() => void schedule(k), k.everyMs))

  // jobs freed from a dead worker are claimed at once
  const leases = keepLeases(ctx.sql, id, leaseSeconds, freed => {
    log.warn('jobs of a dead worker freed', { worker_id: id, freed })
    wake()
  })
  const looping = loop()
  log.info('worker started', { worker_id: id, concurrency, kinds: [...kinds.keys()], lease_seconds: leaseSeconds })

  return {
    id,
    wake,
    drain() {
      return new Promise(resolve => {
        idle.push(resolve)
        wake()
      })
    },
    async stop(graceMs) {
      stopping = true
      for (const timer of timers) clearInterval(timer)
      wake()
      await looping
      await Promise.race([Promise.all(running), Bun.sleep(graceMs)])
      leases.stop()
      const released = await releaseClaimed(ctx.sql, id)
      await listener?.close().catch(() => {})
      log.info('worker stopped', { worker_id: id, released_jobs: released })
    },
  }
}
