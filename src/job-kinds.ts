/**
 * Every job kind the service runs, in one list: the worker role runs these (src/roles.ts). A kind
 * lives in its feature (`*.job.ts`, a `JobKind` from src/jobs/kind.ts); add it here to have it run.
 */
import { verificationMailJob } from './signups/verification-mail.job'
import type { JobKind } from './jobs/kind'
import { cleanupJob } from './maintenance/cleanup.job'
import { plannerJob } from './maintenance/planner.job'
import { executeJob } from './sending/execute'
import { notifyJob } from './drafts/links'
import { deliverJob } from './webhooks/deliver.job'
import { settleJob } from './x402/settle.job'
import { wakeRunJob } from './wake/run.job'
import { wakeSchedulerJob } from './wake/scheduler.job'
import { expireJob, inboundStepJob } from './x402/email/inbound'
import { registryFetchJob } from './registries/fetch.job'
import { registryRefreshJob } from './registries/refresh.job'

export const JOB_KINDS: JobKind[] = [
  cleanupJob,
  plannerJob,
  deliverJob,
  executeJob,
  notifyJob,
  verificationMailJob,
  settleJob,
  wakeSchedulerJob,
  wakeRunJob,
  inboundStepJob,
  expireJob,
  registryFetchJob,
  registryRefreshJob,
]
