/** Every job kind the worker knows, in one list. A kind is a module with a name and a handler. */
import type { AppContext } from '../context'
import type { Job } from './queue'
import { cleanupJob } from './cleanup.job'
import { deliverJob } from '../webhooks/deliver.job'
import { verificationMailJob } from '../account/verification-mail.job'
import { executeJob } from '../sending/execute'

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
}

export const JOB_KINDS: JobKind[] = [cleanupJob, deliverJob, executeJob, verificationMailJob]
