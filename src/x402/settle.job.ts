/**
 * The `x402.settle` job: written with the claim, due a little later. The request that claimed
 * the payment normally settles it first and this job then finds the outcome recorded; it
 * settles only what a crashed or interrupted request left pending, retrying transient failures
 * and failing the settlement at its last attempt.
 */
import type { JobKind } from '../jobs/kind'
import { settleNow } from './settle.service'

export const SETTLE_KIND = 'x402.settle'
/** how long the claiming request has before the job steps in */
export const SETTLE_JOB_DELAY_SECONDS = 60
export const SETTLE_MAX_ATTEMPTS = 12

export const settleJob: JobKind<{ settlement_id: string }> = {
  kind: SETTLE_KIND,
  async handle(ctx, payload, job) {
    const outcome = await settleNow(ctx, payload.settlement_id, { lastAttempt: job.attempts >= job.max_attempts })
    if (outcome.status === 'retry') throw new Error(`settlement not completed: ${outcome.reason}`)
  },
}
