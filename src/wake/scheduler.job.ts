/** The periodic job that fires due wake slots (service.ts `scheduleDueWakes`). */
import type { JobKind } from '../jobs/kind'
import { log } from '../log'
import { WAKE_SCHEDULER_EVERY_MS } from './model'
import { scheduleDueWakes } from './service'

export const wakeSchedulerJob: JobKind<Record<string, never>> = {
  kind: 'wake.schedule',
  everyMs: WAKE_SCHEDULER_EVERY_MS,
  async handle(ctx) {
    const fired = await scheduleDueWakes(ctx)
    if (fired) log.info('wake scheduler', { fired })
  },
}
