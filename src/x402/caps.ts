/**
 * Settle caps per payee organization: defaults of 25 USDC per UTC day, 250 per UTC month and 10
 * per settle, each overridable by the operator (`bin/admin x402 set-caps`). A settle that would
 * exceed one fails the challenge before anything moves on chain.
 */
import { requireOrg } from '../account/org-queries'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { capsWithReceived, settleCapsRow, upsertSettleCaps, type CapsRow } from './caps-queries'

export const DEFAULT_CAPS = { daily: 25_000_000n, monthly: 250_000_000n, per_settle: 10_000_000n }

export type CapReason = 'settle_daily_cap_exceeded' | 'settle_monthly_cap_exceeded' | 'amount_exceeds_per_settle_ceiling'

/** The effective caps: the operator's overrides, or the defaults. */
const effectiveCaps = (row: CapsRow | undefined) => ({
  daily: row?.daily ? BigInt(row.daily) : DEFAULT_CAPS.daily,
  monthly: row?.monthly ? BigInt(row.monthly) : DEFAULT_CAPS.monthly,
  per_settle: row?.per_settle ? BigInt(row.per_settle) : DEFAULT_CAPS.per_settle,
})

/** The organization's effective caps. */
export async function settleCaps(sql: Sql | Tx, orgId: string) {
  return effectiveCaps(await settleCapsRow(sql, orgId))
}

type Caps = ReturnType<typeof effectiveCaps>

/**
 * The payee's caps, and those a settle of `amount` would exceed, counting settled and in-flight
 * settlements of this UTC day and month (totals-queries.ts). The claim's own statement checks the two
 * sums again as it adds to them, so concurrent claims cannot together pass a cap.
 */
export async function capReasons(tx: Tx, payeeOrg: string, amount: bigint): Promise<{ caps: Caps; reasons: CapReason[] }> {
  const row = await capsWithReceived(tx, payeeOrg)
  const caps = effectiveCaps(row)
  const reasons: CapReason[] = []
  if (amount > caps.per_settle) reasons.push('amount_exceeds_per_settle_ceiling')
  if (BigInt(row.day) + amount > caps.daily) reasons.push('settle_daily_cap_exceeded')
  if (BigInt(row.month) + amount > caps.monthly) reasons.push('settle_monthly_cap_exceeded')
  return { caps, reasons }
}

const capValue = (field: string, v: string | null) => {
  if (v === null || v === 'default') return null
  if (!/^[1-9][0-9]{0,30}$/.test(v)) throw errors.validation(field, 'must be a positive integer of base units, or "default"')
  return v
}

/** Operator override of a payee's caps (base units; "default" restores a default). */
export async function setSettleCaps(sql: Sql, orgId: string, caps: { daily: string; monthly: string; per_settle: string }) {
  const daily = capValue('daily', caps.daily)
  const monthly = capValue('monthly', caps.monthly)
  const perSettle = capValue('per_settle', caps.per_settle)
  await requireOrg(sql, orgId)
  await upsertSettleCaps(sql, orgId, { daily, monthly, per_settle: perSettle })
  const effective = await settleCaps(sql, orgId)
  return { org_id: orgId, daily: effective.daily.toString(), monthly: effective.monthly.toString(), per_settle: effective.per_settle.toString() }
}
