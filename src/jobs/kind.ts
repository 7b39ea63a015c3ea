/**
 * What a job kind is. The jobs mechanism (queue, run, worker) knows no kind: each kind is a
 * module of its feature (`*.job.ts`), and the kinds a worker runs are listed where the roles are
 * assembled (src/job-kinds.ts).
 */
import type { AppContext } from '../context'
import type { Job } from './queue'

// biome-ignore lint/suspicious/noExplicitAny: a registry of kinds with different payloads
export interface JobKind<P = any> {
  kind: string
  /** handles one attempt; throwing schedules a retry */
  handle(ctx: AppContext, payload: P, job: Job<P>): Promise<void>
  /**
   * Starts several jobs of this kind claimed together, so that their reads and writes can be
   * set-based: one promise per job, in order, each settling as `handle` would for that job.
   * Without it, each job runs through `handle`.
   */
  handleMany?(ctx: AppContext, jobs: Job<P>[]): Promise<void>[]
  /** seconds before the next attempt after `attempt` failed; default exponential back-off */
  retryDelaySeconds?(ctx: AppContext, attempt: number): number
  /**
   * A periodic kind: every worker running it enqueues one (payload `{}`) at start and then every
   * `everyMs`, deduplicated, so a fleet of workers keeps at most one pending.
   */
  everyMs?: number
}
