/**
 * The `webhook.deliver` job: one attempt per run. A failed attempt throws so the queue retries
 * it after the next delay of WEBHOOK_RETRY_SCHEDULE (by default 30 s, 2 min, 10 min, 30 min,
 * 1 h, 2 h, 4 h, 8 h, 8 h: ten attempts over about 24 hours); the last failure marks the
 * delivery `failed`.
 */
import type { Config } from '../config'
import type { AppContext } from '../context'
import type { Job } from '../jobs/queue'
import { attemptDelivery } from './attempt'

export const DELIVER_KIND = 'webhook.deliver'

export const retrySchedule = (config: Config) => config.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number)
export const deliverAttempts = (config: Config) => retrySchedule(config).length + 1

export const deliverJob = {
  kind: DELIVER_KIND,
  retryDelaySeconds(ctx: AppContext, attempt: number) {
    const schedule = retrySchedule(ctx.config)
    return schedule[Math.min(attempt, schedule.length) - 1] ?? 0
  },
  async handle(ctx: AppContext, payload: { delivery_id: string }, job: Job) {
    const last = job.attempts >= job.max_attempts
    const result = await attemptDelivery(ctx, payload.delivery_id, { last })
    if (result.status === 'pending') throw new Error(`attempt ${job.attempts} failed: ${result.outcome?.status ?? result.outcome?.error ?? 'not sent'}`)
  },
}
