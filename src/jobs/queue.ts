/**
 * The job table (transactional outbox). `enqueue` takes the caller's transaction, so a job
 * exists exactly when the write that caused it committed. Workers claim due jobs with
 * `for update skip locked`, and a job is deleted when it succeeds, rescheduled with
 * exponential back-off when it fails, and kept as `dead` after its last attempt.
 *
 * A claim is a lease: `locked_by` names the holder and `locked_at` is when the holder last said
 * it is alive. A live holder renews all its leases in one statement (`heartbeat`); a lease not
 * renewed for JOB_LEASE_SECONDS belongs to a dead process and is freed by the next heartbeat of
 * any worker, so the job runs again with its attempt counted (docs/jobs.md).
 *
 * The statements are in ./queries.ts; this module decides what they are given.
 */
import { randomUUIDv7 } from 'bun'
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'
import { type Heartbeat, insertJob, insertJobsWith, type Job, markJobFailed, renewLeases } from './queries'

// the queue's statements that callers use as they are (the other features' jobs, the worker)
export {
  claim,
  claimById,
  deleteJobs,
  deleteJobsFor,
  deleteJobStatement,
  type Heartbeat,
  JOBS_CHANNEL,
  type Job,
  releaseClaimed,
  rescheduleUnclaimed,
} from './queries'

export interface EnqueueOptions {
  runAt?: Date
  maxAttempts?: number
  /** while a pending job with this key exists, enqueueing another is a no-op */
  dedupeKey?: string
  /**
   * Inserted already claimed by this lease holder, its first attempt counted (a request that runs
   * the job itself once it has committed: `runClaimed`). No worker is woken for it; should the
   * holder die, its lease runs out and a worker runs the job.
   */
  claimedBy?: string
}

/**
 * Whether a new job wakes idle workers: not when it is inserted claimed, or due later, since a
 * worker woken for it would find nothing to claim (a job that becomes due is found by the
 * workers' poll). A NOTIFY is not free: PostgreSQL serializes the commits of the transactions
 * that send one.
 */
const wakesWorkers = (claimedBy: string | null, runAt: Date | undefined) => claimedBy === null && !(runAt && runAt.getTime() > Date.now())

/** Inserts the job in the caller's transaction; returns its id (null when a pending job has the same dedupe key). */
export async function enqueue(tx: Tx, kind: string, payload: unknown, opts: EnqueueOptions = {}): Promise<string | null> {
  const [row] = await jobStatement(tx, kind, payload, opts)
  return row?.id ?? null
}

/**
 * Runs `write` (a data-modifying statement built with `sql` and not awaited, without
 * `returning`) and inserts the job in one statement: the two commit together even outside a
 * transaction, in one round trip. Returns what `enqueue` returns.
 */
export async function enqueueWith(sql: Tx, write: postgres.Fragment, kind: string, payload: unknown, opts: EnqueueOptions = {}): Promise<string | null> {
  const [row] = await jobStatement(sql, kind, payload, opts, write)
  return row?.id ?? null
}

/** One job of `enqueueEachWith`. */
export interface EachJob extends Omit<EnqueueOptions, 'dedupeKey'> {
  payload: unknown
}

/**
 * `enqueueWith` for many jobs of one kind: runs `write` and inserts one job for each entry of
 * `jobs`, in one statement. Returns the jobs' ids in order. (No dedupe keys.) Idle workers are
 * woken when one of the jobs is for them now (see `wakesWorkers`).
 */
export async function enqueueEachWith(sql: Tx, write: postgres.Fragment, kind: string, jobs: EachJob[]): Promise<string[]> {
  const rows = jobs.map(j => ({
    id: randomUUIDv7(),
    payload: j.payload,
    run_at: j.runAt ?? new Date(),
    max_attempts: j.maxAttempts ?? 10,
    locked_by: j.claimedBy ?? null,
  }))
  await insertJobsWith(
    sql,
    write,
    kind,
    rows,
    rows.some(r => wakesWorkers(r.locked_by, r.run_at)),
  )
  return rows.map(r => r.id)
}

/**
 * The job insert and its NOTIFY in one statement. Delivered on commit, the notification wakes
 * idle workers at once instead of at their next poll; PostgreSQL folds identical notifications
 * of a transaction into one, so several jobs of a kind enqueued together send one.
 */
function jobStatement(sql: Tx, kind: string, payload: unknown, opts: EnqueueOptions, write?: postgres.Fragment) {
  const claimedBy = opts.claimedBy ?? null
  const job = {
    id: randomUUIDv7(),
    kind,
    payload,
    runAt: opts.runAt ?? new Date(),
    maxAttempts: opts.maxAttempts ?? 10,
    dedupeKey: opts.dedupeKey ?? null,
    claimedBy,
  }
  return insertJob(sql, job, wakesWorkers(claimedBy, opts.runAt), write)
}

/** Exponential back-off with jitter: 2^attempt seconds, capped at an hour. */
export function backoffSeconds(attempt: number): number {
  const base = Math.min(3600, 2 ** attempt)
  return Math.round(base * (0.75 + Math.random() * 0.5))
}

/**
 * Records a failed attempt: reschedules it, or marks it dead after the last one. Returns whether
 * it is dead. A holder whose lease was lost (the job was freed, maybe claimed again) records
 * nothing: the job is no longer its to reschedule.
 */
export async function fail(sql: Sql, job: Job, error: string, retryInSeconds = backoffSeconds(job.attempts)): Promise<boolean> {
  const dead = job.attempts >= job.max_attempts
  await markJobFailed(sql, job, error.slice(0, 2000), dead, retryInSeconds)
  return dead
}

/**
 * One statement per holder and interval, however many jobs it holds: renews every lease of
 * `holder`, and frees the jobs of other holders whose lease ran out (`leaseSeconds` without a
 * renewal), so that a worker killed mid-attempt has its jobs run again. The attempt it was
 * making stays counted. A job whose last attempt was lost that way gets one more, so that its
 * handler, seeing `attempts >= max_attempts`, records a final outcome (a webhook delivery
 * `failed` or delivered, not `pending` for ever); lost again, it is dead: a job that kills every
 * worker that runs it does not run for ever.
 */
export async function heartbeat(sql: Sql, holder: string, leaseSeconds: number): Promise<Heartbeat> {
  return renewLeases(sql, holder, leaseSeconds, 'the worker running this attempt stopped renewing its lease (it crashed or was killed)')
}
