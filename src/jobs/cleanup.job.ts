/** Periodic housekeeping: expired idempotency records, past rate-limit windows, stale job locks. */
import type { AppContext } from '../context'
import { log } from '../log'
import { reclaimStale } from './queue'

export const CLEANUP_KIND = 'maintenance.cleanup'
/** A job lock older than this belongs to a dead worker: longer than the longest job (a 10-minute function run). */
export const STALE_LOCK_SECONDS = 15 * 60

export const cleanupJob = {
  kind: CLEANUP_KIND,
  async handle(ctx: AppContext) {
    const { sql } = ctx
    const idempotency = await sql`delete from idempotency_keys where expires_at < now()`
    const windows = await sql`delete from rate_limit_windows where window_start < extract(epoch from now())::bigint - 120`
    const reclaimed = await reclaimStale(sql, STALE_LOCK_SECONDS)
    log.info('cleanup', { idempotency_keys: idempotency.count, rate_limit_windows: windows.count, reclaimed_jobs: reclaimed })
  },
}
