/**
 * The `webhook.deliver` job: one attempt per run. A failed attempt throws so the queue retries
 * it after the next delay of WEBHOOK_RETRY_SCHEDULE (by default 30 s, 2 min, 10 min, 30 min,
 * 1 h, 2 h, 4 h, 8 h, 8 h: ten attempts over about 24 hours); the last failure marks the
 * delivery `failed`. The jobs a worker claims together start together: their deliveries are
 * loaded and counted in one statement.
 */
import type { Config } from '../config'
import type { AppContext } from '../context'
import type { Job } from '../jobs/queue'
import type { JobKind } from '../jobs/kind'
import { beginAttempts, sendAttempt } from './attempt'

export const DELIVER_KIND = 'webhook.deliver'

export const retrySchedule = (config: Config) => config.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number)
export const deliverAttempts = (config: Config) => retrySchedule(config).length + 1

interface DeliverPayload {
  delivery_id: string
}

function deliverMany(ctx: AppContext, jobs: Job<DeliverPayload>[]): Promise<void>[] {
  const begun = beginAttempts(
    ctx,
    jobs.map(job => job.payload.delivery_id),
  )
  return jobs.map(async job => {
    const result = await sendAttempt(ctx, (await begun).get(job.payload.delivery_id), { last: job.attempts >= job.max_attempts })
    if (result.status === 'pending') throw new Error(`attempt ${job.attempts} failed: ${result.outcome?.status ?? result.outcome?.error ?? 'not sent'}`)
  })
}

export const deliverJob: JobKind<DeliverPayload> = {
  kind: DELIVER_KIND,
  retryDelaySeconds(ctx, attempt) {
    const schedule = retrySchedule(ctx.config)
    return schedule[Math.min(attempt, schedule.length) - 1] ?? 0
  },
  handle: (ctx, _payload, job) => deliverMany(ctx, [job])[0]!,
  handleMany: deliverMany,
}
