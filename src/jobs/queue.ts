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
  /** the lease holder that claimed this attempt */
  locked_by: string
}

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
  const wake = rows.some(r => wakesWorkers(r.locked_by, r.run_at))
  await sql`
    with write as (${write}),
    job as (
      insert into jobs (id, kind, payload, run_at, max_attempts, locked_by, locked_at, attempts)
      select j.id, ${kind}, j.payload, j.run_at, j.max_attempts, j.locked_by,
             case when j.locked_by is null then null else now() end, case when j.locked_by is null then 0 else 1 end
        from jsonb_to_recordset(${sql.json(rows as never)}::jsonb) as j(id uuid, payload jsonb, run_at timestamptz, max_attempts int, locked_by text)
      returning 1)
    select (select count(*) from job)::int as inserted${wake ? sql`, pg_notify(${JOBS_CHANNEL}, ${kind})` : sql``}`
  return rows.map(r => r.id)
}

/**
 * The job insert and its NOTIFY in one statement. Delivered on commit, the notification wakes
 * idle workers at once instead of at their next poll; PostgreSQL folds identical notifications
 * of a transaction into one, so several jobs of a kind enqueued together send one.
 */
function jobStatement(sql: Tx, kind: string, payload: unknown, opts: EnqueueOptions, write?: postgres.Fragment) {
  const claimed = opts.claimedBy ?? null
  const wake = wakesWorkers(claimed, opts.runAt)
  return sql<{ id: string | null }[]>`
    with ${write ? sql`write as (${write}),` : sql``}
    job as (
      insert into jobs (id, kind, payload, run_at, max_attempts, dedupe_key, locked_by, locked_at, attempts)
      values (${randomUUIDv7()}, ${kind}, ${sql.json(payload as never)}, ${opts.runAt ?? new Date()}, ${opts.maxAttempts ?? 10}, ${opts.dedupeKey ?? null},
              ${claimed}, ${claimed === null ? null : sql`now()`}, ${claimed === null ? 0 : 1})
      on conflict (dedupe_key) do nothing
      returning id)
    select (select id from job) as id${wake ? sql`, pg_notify(${JOBS_CHANNEL}, ${kind})` : sql``}`
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
    returning id, kind, payload, attempts, max_attempts, created_at, locked_by`
}

/** Claims one job by id if nobody holds it (to run it inline, right after the request that created it). */
export async function claimById(sql: Sql, workerId: string, jobId: string): Promise<Job | null> {
  const [job] = await sql<Job[]>`
    update jobs set locked_by = ${workerId}, locked_at = now(), attempts = attempts + 1
     where id = ${jobId} and status = 'pending' and locked_by is null
    returning id, kind, payload, attempts, max_attempts, created_at, locked_by`
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

/**
 * Records a failed attempt: reschedules it, or marks it dead after the last one. Returns whether
 * it is dead. A holder whose lease was lost (the job was freed, maybe claimed again) records
 * nothing: the job is no longer its to reschedule.
 */
export async function fail(sql: Sql, job: Job, error: string, retryInSeconds = backoffSeconds(job.attempts)): Promise<boolean> {
  const dead = job.attempts >= job.max_attempts
  await sql`
    update jobs set locked_by = null, locked_at = null, last_error = ${error.slice(0, 2000)},
           status = ${dead ? 'dead' : 'pending'},
           run_at = now() + make_interval(secs => ${retryInSeconds})
     where id = ${job.id} and locked_by = ${job.locked_by}`
  return dead
}

/**
 * Hands back at once the jobs `holder` claimed and did not finish (a worker shutting down),
 * without counting the attempt, and wakes the workers listening so another one claims them now.
 */
export async function releaseClaimed(sql: Sql, holder: string): Promise<number> {
  const [row] = await sql<{ released: number }[]>`
    with released as (
      update jobs set locked_by = null, locked_at = null, attempts = greatest(attempts - 1, 0)
       where locked_by = ${holder} returning kind)
    select (select count(*)::int from released) as released, ${notifyKinds(sql, 'released')}`
  return row!.released
}

/** One NOTIFY per distinct kind among the rows of the CTE `rows` (a `kind` column). */
function notifyKinds(sql: Sql, rows: string) {
  return sql`(select count(pg_notify(${JOBS_CHANNEL}, kind)) from (select distinct kind from ${sql(rows)}) k) as notified`
}

export interface Heartbeat {
  /** leases of `holder` renewed */
  renewed: number
  /** jobs of dead holders freed to run again */
  freed: number
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
  const lost = 'the worker running this attempt stopped renewing its lease (it crashed or was killed)'
  const [row] = await sql<Heartbeat[]>`
    with renewed as (
      update jobs set locked_at = now() where locked_by = ${holder} returning 1),
    expired as (
      update jobs set locked_by = null, locked_at = null,
             status = case when attempts > max_attempts then 'dead' else 'pending' end,
             last_error = ${lost}
       where locked_by is not null and locked_by <> ${holder} and locked_at < now() - make_interval(secs => ${leaseSeconds})
      returning kind, status),
    freed as (select kind from expired where status = 'pending')
    select (select count(*)::int from renewed) as renewed, (select count(*)::int from freed) as freed, ${notifyKinds(sql, 'freed')}`
  return { renewed: row!.renewed, freed: row!.freed }
}

/**
 * Deletes the jobs of `kind` whose payload has `field` = `value` (only those no worker holds,
 * when `unclaimed`), in the transaction that makes them pointless.
 */
export async function deleteJobsFor(tx: Tx, kind: string, field: string, value: string, opts: { unclaimed?: boolean } = {}): Promise<void> {
  await tx`delete from jobs where kind = ${kind} and payload->>${field}::text = ${value} ${opts.unclaimed ? tx`and locked_by is null` : tx``}`
}

/** Moves the unclaimed jobs of `kind` whose payload has `field` = `value` to run at `at`. */
export async function rescheduleUnclaimed(tx: Tx, kind: string, field: string, value: string, at: Date): Promise<void> {
  await tx`update jobs set run_at = ${at} where kind = ${kind} and payload->>${field}::text = ${value} and locked_by is null`
}

/** The statement that deletes one job, to join as a common table expression to the write that finishes its work. */
export const deleteJobStatement = (tx: Tx, id: string): postgres.Fragment => tx`delete from jobs where id = ${id}`
