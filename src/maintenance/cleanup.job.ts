/**
 * Periodic housekeeping: expired idempotency records, past rate-limit windows, send counts and
 * x402 totals, and the expired rows of the identity flows (OAuth requests, codes and tokens,
 * device logins, signups, unclaimed invitations). (Jobs of dead workers are freed by the
 * workers' lease heartbeat.)
 */
import { pruneRateLimitWindows } from '../http/rate-limit'
import { pruneIdempotencyKeys } from '../http/idempotency'
import { pruneExpiredOAuthRows } from '../oauth/queries'
import type { AppContext } from '../context'
import type { JobKind } from '../jobs/kind'
import { log } from '../log'
import { deleteExpiredMemories } from '../memories/service'
import { pruneChanges } from '../changes/feed'

export const CLEANUP_KIND = 'maintenance.cleanup'

/**
 * Rows past their expiry that nothing reads any more (OAuth's: pruneExpiredOAuthRows); signups
 * live 24 hours, as long as they count towards the per-address daily cap.
 */
export async function deleteExpiredIdentityRows(sql: AppContext['sql']) {
  const count = async (q: Promise<{ count: number }>) => (await q).count
  return {
    ...(await pruneExpiredOAuthRows(sql)),
    cli_device_pages: await count(sql`delete from cli_device_pages where expires_at < now()`),
    cli_device_codes: await count(sql`delete from cli_device_codes where expires_at < now()`),
    signups: await count(sql`delete from signups where expires_at < now()`),
    agent_invitations: await count(sql`delete from agent_connections where claimed_at is null and invitation_expires_at < now()`),
  }
}

/** One round of housekeeping. */
export async function cleanup(ctx: AppContext) {
  const { sql } = ctx
  const idempotency = await pruneIdempotencyKeys(sql)
  const windows = await pruneRateLimitWindows(sql)
  const sendCounts = await sql`delete from send_counts where start < now() - interval '2 days'`
  const x402Totals = await sql`
    delete from x402_totals where start < (now() at time zone 'utc')::date - case span when 'day' then 2 else 62 end`
  const identity = await deleteExpiredIdentityRows(sql)
  const memories = await deleteExpiredMemories(ctx)
  const changes = await pruneChanges(sql)
  log.info('cleanup', {
    idempotency_keys: idempotency,
    rate_limit_windows: windows,
    send_counts: sendCounts.count,
    x402_totals: x402Totals.count,
    ...identity,
    expired_memories: memories,
    pruned_changes: changes,
  })
}

export const cleanupJob: JobKind<Record<string, never>> = { kind: CLEANUP_KIND, everyMs: 10 * 60_000, handle: cleanup }
