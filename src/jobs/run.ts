/**
 * Running one claimed job: its attempt, then its outcome recorded (deleted when done, rescheduled
 * or dead when it failed), one log line. The worker runs what it claims through here, and so does
 * a request that runs a job it has just committed (`runNow`), so every attempt is recorded alike.
 */
import { randomUUIDv7 } from 'bun'
import { perProcess, type AppContext } from '../context'
import { GroupCommit } from '../db/group-commit'
import { log } from '../log'
import type { JobKind } from './kind'
import { keepLeases, type LeaseKeeper } from './lease'
import { claimById, deleteJobs, fail, releaseClaimed, type Job } from './queue'

/**
 * Jobs that finish while a delete is in flight go together in the next one (group commit): a
 * busy worker pays one statement and one commit for several jobs.
 */
const completions = perProcess(
  ({ sql }) =>
    new GroupCommit<string, void>(async ids => {
      await deleteJobs(sql, ids)
      return ids.map(() => undefined)
    }),
)

/**
 * Runs one claimed job (or awaits `attempt`, when the caller started it: a kind's `handleMany`,
 * a request that holds what the handler would read): completes it, or records the failed attempt
 * for a retry; logs one line. Never throws. An `attempt` that resolves to true has deleted the
 * job itself, in the transaction that wrote its outcome.
 */
export async function runJob(ctx: AppContext, kind: JobKind, job: Job, attempt?: Promise<boolean | void>): Promise<void> {
  const started = performance.now()
  const fields = () => ({ job_id: job.id, kind: job.kind, attempt: job.attempts, duration_ms: Math.round(performance.now() - started) })
  try {
    const deleted = await (attempt ?? kind.handle(ctx, job.payload, job))
    if (deleted !== true)
      await completions(ctx).submit(job.id)
      // a periodic kind's round is routine: a person's log (LOG_FORMAT=text) leaves it out
    ;(kind.everyMs ? log.routine : log.info)('job', { ...fields(), outcome: 'done' })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    const dead = await fail(ctx.sql, job, message, kind.retryDelaySeconds?.(ctx, job.attempts)).catch(() => false)
    log.warn('job', { ...fields(), outcome: dead ? 'dead' : 'retry', error: message })
  }
}

/**
 * The lease holder of the jobs this process runs with `runNow`: one renewal statement per
 * interval covers all of them, and it runs only while one of them runs.
 */
const inlineHolder = perProcess(() => ({ id: `inline_${randomUUIDv7()}`, running: 0, leases: undefined as LeaseKeeper | undefined }))

/**
 * Runs the job `jobId` of `kind` here and now, if no worker holds it (a request running the job it
 * has just committed, to answer with its outcome). `attempt`, when given, makes the attempt in
 * place of the kind's handler, from what the caller already holds; its result is returned when it
 * succeeded. A failure is recorded for the worker's retries, as any attempt's. Should the process
 * die meanwhile, the lease runs out and a worker runs the job again.
 */
export async function runNow<T = void>(ctx: AppContext, kind: JobKind, jobId: string, attempt?: (job: Job) => Promise<T>): Promise<T | undefined> {
  const job = await claimById(ctx.sql, inlineHolder(ctx).id, jobId)
  if (!job) return undefined
  return runClaimed(ctx, kind, job, attempt)
}

/**
 * The lease holder of the jobs this process runs inline: a request may insert its job already
 * claimed by it (`enqueue`'s claimedBy) and run it with `runClaimed` once committed, which saves
 * the claim's statement and commit.
 */
export const inlineHolderId = (ctx: AppContext): string => inlineHolder(ctx).id

/**
 * Runs a job this process's inline holder has claimed (runNow's second half), as runNow does.
 * `deletedBy`: whether the attempt, given what it returned, deleted the job with its outcome.
 */
export async function runClaimed<T = void>(
  ctx: AppContext,
  kind: JobKind,
  job: Job,
  attempt?: (job: Job) => Promise<T>,
  deletedBy?: (result: T) => boolean,
): Promise<T | undefined> {
  const holder = inlineHolder(ctx)
  if (holder.running++ === 0) holder.leases = keepLeases(ctx.sql, holder.id, ctx.config.JOB_LEASE_SECONDS)
  let result: T | undefined
  try {
    const attempted =
      attempt &&
      Promise.resolve(job)
        .then(attempt)
        .then(r => ((result = r), deletedBy?.(r) ?? false))
    await runJob(ctx, kind, job, attempted)
  } finally {
    if (--holder.running === 0) holder.leases?.stop()
  }
  return result
}

/**
 * On shutdown, once requests were answered: waits for the jobs this process still runs inline
 * without a request waiting on them (a send answered before its relay, respond-async) to
 * finish, for at most `ms`. Resolves to whether none is left running.
 */
export async function inlineSettled(ctx: AppContext, ms: number): Promise<boolean> {
  const holder = inlineHolder(ctx)
  const deadline = Date.now() + ms
  while (holder.running > 0 && Date.now() < deadline) await Bun.sleep(Math.min(20, Math.max(1, deadline - Date.now())))
  return holder.running === 0
}

/** On shutdown, once requests had their grace: hands back the jobs `runNow` still holds. */
export function releaseInline(ctx: AppContext): Promise<number> {
  return releaseClaimed(ctx.sql, inlineHolder(ctx).id)
}
