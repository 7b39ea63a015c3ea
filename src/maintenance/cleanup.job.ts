/**
 * Periodic housekeeping: expired idempotency records, past rate-limit windows, send counts and
 * x402 totals, the receipts of received mail past their day, and the expired rows of the identity flows (OAuth requests, codes and tokens,
 * device logins, signups, unclaimed invitations), and what the modules above plug into
 * `expiredRows` (the console's sessions). (Jobs of dead workers are freed by the workers' lease
 * heartbeat.)
 */
import { pruneRateLimitWindows } from '../http/rate-limit-queries'
import { pruneIdempotencyKeys } from '../http/idempotency-queries'
import { pruneExpiredOAuthRows } from '../oauth/queries'
import type { AppContext } from '../context'
import type { JobKind } from '../jobs/kind'
import { log } from '../log'
import { deleteExpiredMemories } from '../memories/service'
import { pruneChanges } from '../changes/feed'
import { pruneReceipts } from '../mail/inbound/receipt-queries'
import { pruneExpiredDeviceLogins } from '../cli/queries'
import { pruneUnclaimedInvitations } from '../connections/queries'
import { pruneSendCounts } from '../sending/send-count-queries'
import { pruneExpiredSignups } from '../signups/queries'
import { pruneTotals } from '../x402/totals-queries'

export const CLEANUP_KIND = 'maintenance.cleanup'

/** Deletes a table's rows past their expiry; answers how many went. */
export type Pruner = (sql: AppContext['sql']) => Promise<number>

declare module '../context' {
  interface Plugins {
    /**
     * maintenance/cleanup.job.ts: the expired rows of modules this job may not import (a floor
     * above it: the console's sessions), by the name its log line counts them under
     */
    readonly expiredRows: Readonly<Record<string, Pruner>>
  }
}

/**
 * Rows past their expiry that nothing reads any more (OAuth's: pruneExpiredOAuthRows); signups
 * live 24 hours, as long as they count towards the per-address daily cap.
 */
export async function deleteExpiredIdentityRows(sql: AppContext['sql']) {
  return {
    ...(await pruneExpiredOAuthRows(sql)),
    ...(await pruneExpiredDeviceLogins(sql)),
    signups: await pruneExpiredSignups(sql),
    agent_invitations: await pruneUnclaimedInvitations(sql),
  }
}

/** One round of housekeeping. */
export async function cleanup(ctx: AppContext) {
  const { sql } = ctx
  const idempotency = await pruneIdempotencyKeys(sql)
  const windows = await pruneRateLimitWindows(sql)
  const sendCounts = await pruneSendCounts(sql)
  const x402Totals = await pruneTotals(sql)
  const identity = await deleteExpiredIdentityRows(sql)
  const memories = await deleteExpiredMemories(ctx)
  const changes = await pruneChanges(sql)
  const receipts = await pruneReceipts(sql)
  const plugged: Record<string, number> = {}
  for (const [name, prune] of Object.entries(ctx.plugins.expiredRows)) plugged[name] = await prune(sql)
  const deleted = {
    idempotency_keys: idempotency,
    rate_limit_windows: windows,
    send_counts: sendCounts,
    x402_totals: x402Totals,
    ...identity,
    expired_memories: memories,
    pruned_changes: changes,
    inbound_receipts: receipts,
    ...plugged,
  }
  // a round that deleted nothing is routine: a person's log (LOG_FORMAT=text) leaves it out
  ;(Object.values(deleted).some(n => n > 0) ? log.info : log.routine)('cleanup', deleted)
}

export const cleanupJob: JobKind<Record<string, never>> = { kind: CLEANUP_KIND, everyMs: 10 * 60_000, handle: cleanup }
