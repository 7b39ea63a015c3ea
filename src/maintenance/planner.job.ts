/**
 * Every 15 seconds, the tables that grew since their last ANALYZE are analyzed (and, where
 * autovacuum is off, the ones full of dead rows, the job queue first of all, vacuumed), so no
 * plan made on a nearly empty table outlives a tenth of growth (src/db/statistics.ts).
 */
import type { JobKind } from '../jobs/kind'
import { log } from '../log'
import { refreshStatistics } from '../db/statistics'

export const plannerJob: JobKind<Record<string, never>> = {
  kind: 'maintenance.statistics',
  everyMs: 15_000,
  async handle(ctx) {
    const done = await refreshStatistics(ctx.sql)
    if (done.analyzed.length || done.vacuumed.length) log.info('statistics refreshed', done)
  },
}
