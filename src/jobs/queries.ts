/**
 * The jobs table (jobs/ owns it): the row type and every statement. The queue (./queue.ts) keeps
 * the rules: when a new job wakes the workers, the back-off, when a failed job is dead.
 */
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'

/** The channel a new or freed job is announced on (NOTIFY), which idle workers listen to. */
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

/** A job to insert, its options settled by the queue. */
export interface NewJob {
  id: string
  kind: string
  payload: unknown
  runAt: Date
  maxAttempts: number
  dedupeKey: string | null
  /** inserted already claimed by this holder, its first attempt counted */
  claimedBy: string | null
}

/**
 * Inserts one job (nothing when a pending job has its dedupe key), after running `write` when
 * given (a data-modifying statement, without `returning`) in the same statement, and sends the
 * NOTIFY when `wake`. Returns the job's id, null when nothing was inserted.
 */
export function insertJob(sql: Tx, job: NewJob, wake: boolean, write?: postgres.Fragment) {
  const claimed = job.claimedBy
  return sql<{ id: string | null }[]>`
    with ${write ? sql`write as (${write}),` : sql``}
    job as (
      insert into jobs (id, kind, payload, run_at, max_attempts, dedupe_key, locked_by, locked_at, attempts)
      values (${job.id}, ${job.kind}, ${sql.json(job.payload as never)}, ${job.runAt}, ${job.maxAttempts}, ${job.dedupeKey},
              ${claimed}, ${claimed === null ? null : sql`now()`}, ${claimed === null ? 0 : 1})
      on conflict (dedupe_key) do nothing
      returning id)
    select (select id from job) as id${wake ? sql`, pg_notify(${JOBS_CHANNEL}, ${job.kind})` : sql``}`
}

/** One job of `insertJobsWith`. */
export interface NewJobRow {
  id: string
  payload: unknown
  run_at: Date
  max_attempts: number
  locked_by: string | null
}

/** Runs `write` and inserts the jobs `rows` of `kind` in one statement (no dedupe keys); sends the NOTIFY when `wake`. */
export async function insertJobsWith(sql: Tx, write: postgres.Fragment, kind: string, rows: NewJobRow[], wake: boolean): Promise<void> {
  await sql`
    with write as (${write}),
    job as (
      insert into jobs (id, kind, payload, run_at, max_attempts, locked_by, locked_at, attempts)
      select j.id, ${kind}, j.payload, j.run_at, j.max_attempts, j.locked_by,
             case when j.locked_by is null then null else now() end, case when j.locked_by is null then 0 else 1 end
        from jsonb_to_recordset(${sql.json(rows as never)}::jsonb) as j(id uuid, payload jsonb, run_at timestamptz, max_attempts int, locked_by text)
      returning 1)
    select (select count(*) from job)::int as inserted${wake ? sql`, pg_notify(${JOBS_CHANNEL}, ${kind})` : sql``}`
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

/**
 * Frees a failed attempt's job: pending again at `now + retryInSeconds`, or `dead`, with its
 * error. Only while `job.locked_by` still holds it: a holder whose lease was lost records nothing.
 */
export async function markJobFailed(sql: Sql, job: Job, error: string, dead: boolean, retryInSeconds: number): Promise<void> {
  await sql`
    update jobs set locked_by = null, locked_at = null, last_error = ${error},
           status = ${dead ? 'dead' : 'pending'},
           run_at = now() + make_interval(secs => ${retryInSeconds})
     where id = ${job.id} and locked_by = ${job.locked_by}`
}

/**
 * Hands back the jobs `holder` claimed, without counting the attempt, and wakes the workers
 * listening; returns how many.
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
 * Renews every lease of `holder` and frees the jobs of other holders whose lease ran out
 * (`leaseSeconds` without a renewal), recording `lost` as their error: pending again, or dead
 * when the attempt lost was already one past the last.
 */
export async function renewLeases(sql: Sql, holder: string, leaseSeconds: number, lost: string): Promise<Heartbeat> {
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
