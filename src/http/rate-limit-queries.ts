/**
 * The rate_limit_windows table (http/ owns it): the shared counters of the fixed windows, taken
 * through `rate_limit_take` (sql/). The leases and decisions are in ./rate-limit.ts.
 */
import type { Sql } from '../db/client'

/** What `rate_limit_take` answers: the requests granted, the window's count, and the milliseconds to its end. */
export interface WindowTake {
  granted: number
  used: number
  reset_ms: number
}

/** Takes up to `want` requests of `bucket`'s current window of `windowSeconds`, whose limit is `limit`. */
export async function takeFromWindow(sql: Sql, bucket: string, windowSeconds: number, want: number, limit: number): Promise<WindowTake | undefined> {
  const [row] = await sql<WindowTake[]>`
    select granted, used, reset_ms from rate_limit_take(${bucket}, ${windowSeconds}, ${want}, ${limit})`
  return row
}

/** Deletes the windows older than two minutes, which no lease reads any more; returns how many. */
export async function pruneRateLimitWindows(sql: Sql): Promise<number> {
  return (await sql`delete from rate_limit_windows where window_start < extract(epoch from now())::bigint - 120`).count
}
