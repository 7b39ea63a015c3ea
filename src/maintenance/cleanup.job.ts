/**
 * Periodic housekeeping: expired idempotency records, past rate-limit windows, send counts and
 * x402 totals, and the expired rows of the identity flows (OAuth requests, codes and tokens,
 * device logins, signups, unclaimed invitations). (Jobs of dead workers are freed by the
 * workers' lease heartbeat.)
 */
import type { AppContext } from '../context'
import type { JobKind } from '../jobs/kind'
import { log } from '../log'
import { deleteExpiredMemories } from '../memories/service'
import { pruneChanges } from '../changes/feed'

export const CLEANUP_KIND = 'maintenance.cleanup'

/**
 * Rows past their expiry that nothing reads any more. Codes are kept a day past expiry, because
 * a spent code presented again revokes the grant it produced (replay detection); tokens go
 * with their expiry (a grant ends with its last token, and its row stays for the record);
 * signups live 24 hours, as long as they count towards the per-address daily cap.
 */
export async function deleteExpiredIdentityRows(sql: AppContext['sql']) {
  const count = async (q: Promise<{ count: number }>) => (await q).count
  return {
    oauth_authorization_requests: await count(sql`delete from oauth_authorization_requests where expires_at < now()`),
    oauth_codes: await count(sql`delete from oauth_codes where expires_at < now() - interval '1 day'`),
    oauth_tokens: await count(sql`delete from oauth_tokens where expires_at < now()`),
    cli_device_pages: await count(sql`delete from cli_device_pages where expires_at < now()`),
    cli_device_codes: await count(sql`delete from cli_device_codes where expires_at < now()`),
    signups: await count(sql`delete from signups where expires_at < now()`),
    agent_invitations: await count(sql`delete from agent_connections where claimed_at is null and invitation_expires_at < now()`),
  }
}

/** One round of housekeeping. */
export async function cleanup(ctx: AppContext) {
  const { sql } = ctx
  const idempotency = await sql`delete from idempotency_keys where expires_at < now()`
  const windows = await sql`delete from rate_limit_windows where window_start < extract(epoch from now())::bigint - 120`
  const sendCounts = await sql`delete from send_counts where start < now() - interval '2 days'`
  const x402Totals = await sql`
    delete from x402_totals where start < (now() at time zone 'utc')::date - case span when 'day' then 2 else 62 end`
  const identity = await deleteExpiredIdentityRows(sql)
  const memories = await deleteExpiredMemories(ctx)
  const changes = await pruneChanges(sql)
  const deleted = {
    idempotency_keys: idempotency.count,
    rate_limit_windows: windows.count,
    send_counts: sendCounts.count,
    x402_totals: x402Totals.count,
    ...identity,
    expired_memories: memories,
    pruned_changes: changes,
  }
  // a round that deleted nothing is routine: a person's log (LOG_FORMAT=text) leaves it out
  ;(Object.values(deleted).some(n => n > 0) ? log.info : log.routine)('cleanup', deleted)
}

export const cleanupJob: JobKind<Record<string, never>> = { kind: CLEANUP_KIND, everyMs: 10 * 60_000, handle: cleanup }
