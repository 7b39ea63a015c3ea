/**
 * The job table (transactional outbox). `enqueue` takes the caller's transaction, so a job
 * exists exactly when the write that caused it committed. Workers claim due jobs with
 * `for update skip locked`, and a job is deleted when it succeeds, rescheduled with
 * exponential back-off when it fails, and kept as `dead` after its last attempt.
 */
import { randomUUIDv7 } from 'bun'
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'

export const JOBS_CHANNEL = 'jobs'

export interface Job<P = unknown> {
  id: string
  kind: string
  payload: P
  attempts: number
  max_attempts: number
  created_at: Date
}

export interface EnqueueOptions {
  runAt?: Date
  maxAttempts?: number
  /** while a pending job with this key exists, enqueueing another is a no-op */
  dedupeKey?: string
}

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

/**
 * The job insert and its NOTIFY in one statement. Delivered on commit, the notification wakes
 * idle workers at once instead of at their next poll; PostgreSQL folds identical notifications
 * of a transaction into one, so several jobs of a kind enqueued together send one.
 */
function jobStatement(sql: Tx, kind: string, payload: unknown, opts: EnqueueOptions, write?: postgres.Fragment) {
  return sql<{ id: string | null }[]>`
    with ${write ? sql`write as (${write}),` : sql``}
    job as (
      insert into jobs (id, kind, payload, run_at, max_attempts, dedupe_key)
      values (${randomUUIDv7()}, ${kind}, ${sql.json(payload as never)}, ${opts.runAt ?? new Date()}, ${opts.maxAttempts ?? 10}, ${opts.dedupeKey ?? null})
      on conflict (dedupe_key) do nothing
      returning id)
    select (select id from job) as id, pg_notify(${JOBS_CHANNEL}, ${kind})`
}

/**
 * Claims up to `limit` due jobs of the given kinds for `workerId`, counting the attempt. `now`
 * replaces the database clock (tests drive scheduled work with it).
 */
export async function claim(sql: Sql, workerId: string, kinds: string[], limit: number, now: Date | null = null): Promise<Job[]> {
  return sql<Job[]>`
    update jobs set locked_by = ${workerId}, locked_at = now(), attempts = attempts + 1
     where id in (
       select id from jobs
        where status = 'pending' and locked_by is null and run_at <= coalesce(${now}::timestamptz, now()) and kind = any(${kinds})
        order by run_at
        limit ${limit}
        for update skip locked)
    returning id, kind, payload, attempts, max_attempts, created_at`
}

/** Claims one job by id if nobody holds it (to run it inline, right after the request that created it). */
export async function claimById(sql: Sql, workerId: string, jobId: string): Promise<Job | null> {
  const [job] = await sql<Job[]>`
    update jobs set locked_by = ${workerId}, locked_at = now(), attempts = attempts + 1
     where id = ${jobId} and status = 'pending' and locked_by is null
    returning id, kind, payload, attempts, max_attempts, created_at`
  return job ?? null
}

/** Deletes finished jobs. */
export async function deleteJobs(sql: Sql, ids: string[]): Promise<void> {
  await sql`delete from jobs where id = any(${ids}::uuid[])`
}

/** Exponential back-off with jitter: 2^attempt seconds, capped at an hour. */
export function backoffSeconds(attempt: number): number {
  const base = Math.min(3600, 2 ** attempt)
  return Math.round(base * (0.75 + Math.random() * 0.5))
}

/** Records a failed attempt: reschedules it, or marks it dead after the last one. Returns whether it is dead. */
export async function fail(sql: Sql, job: Job, error: string, retryInSeconds = backoffSeconds(job.attempts)): Promise<boolean> {
  const dead = job.attempts >= job.max_attempts
  await sql`
    update jobs set locked_by = null, locked_at = null, last_error = ${error.slice(0, 2000)},
           status = ${dead ? 'dead' : 'pending'},
           run_at = now() + make_interval(secs => ${retryInSeconds})
     where id = ${job.id}`
  return dead
}

/** On shutdown: hands back jobs this worker claimed but did not finish, without counting the attempt. */
export async function releaseClaimed(sql: Sql, workerId: string): Promise<number> {
  const rows = await sql`
    update jobs set locked_by = null, locked_at = null, attempts = greatest(attempts - 1, 0)
     where locked_by = ${workerId} returning id`
  return rows.length
}

/** Frees jobs whose worker died mid-attempt (its lock is older than `staleSeconds`). */
export async function reclaimStale(sql: Sql, staleSeconds: number): Promise<number> {
  const rows = await sql`
    update jobs set locked_by = null, locked_at = null
     where locked_by is not null and locked_at < now() - make_interval(secs => ${staleSeconds}) returning id`
  return rows.length
}
