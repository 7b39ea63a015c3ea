/**
 * The spend policy of a paying organization: a kill switch, a per-payment cap, a per-UTC-day
 * cap and an optional payee allowlist. A refusal leaves the challenge pending and is recorded
 * in the payer's declined payments.
 */
import type { Sql, Tx } from '../db/client'
import { ApiError } from '../errors'
import type { ChallengeRow } from './challenge-queries'
import { policyWithSpent, spendPolicyRow, upsertSpendPolicy, type PolicyRow } from './policy-queries'

export type DeclineReason = 'paused' | 'per_payment_cap' | 'daily_cap' | 'allowlist' | 'spend_non_positive_amount'

const NONE: PolicyRow = { paused: false, per_payment_cap: null, daily_cap: null, payee_allowlist: null, updated_at: null }

/** The organization's spend policy, or the policy of none (nothing refused). */
export async function getSpendPolicy(sql: Sql | Tx, orgId: string): Promise<PolicyRow> {
  return (await spendPolicyRow(sql, orgId)) ?? NONE
}

export const presentPolicy = (p: PolicyRow) => ({ ...p, updated_at: p.updated_at?.toISOString() ?? null })

export interface PolicyUpdate {
  paused?: boolean
  per_payment_cap?: string | null
  daily_cap?: string | null
  payee_allowlist?: string[] | null
}

/** Merge update: an omitted field keeps its value, an explicit null clears it. */
export async function updateSpendPolicy(sql: Sql, orgId: string, u: PolicyUpdate): Promise<PolicyRow> {
  return sql.begin(async tx => {
    const current = await getSpendPolicy(tx, orgId)
    const has = (k: keyof PolicyUpdate) => Object.hasOwn(u, k)
    const next = {
      paused: u.paused ?? current.paused,
      per_payment_cap: has('per_payment_cap') ? (u.per_payment_cap ?? null) : current.per_payment_cap,
      daily_cap: has('daily_cap') ? (u.daily_cap ?? null) : current.daily_cap,
      payee_allowlist: has('payee_allowlist')
        ? u.payee_allowlist
          ? [...new Set(u.payee_allowlist.map(a => a.toLowerCase()))]
          : null
        : current.payee_allowlist,
    }
    return upsertSpendPolicy(tx, orgId, next)
  })
}

/**
 * What the payer's policy says about paying this challenge now, counting what it already paid
 * (or has in flight) this UTC day (totals-queries.ts), with its daily cap: the claim's own statement
 * checks the day's sum again as it adds to it, so concurrent claims cannot together pass it.
 */
export async function declineReasons(
  tx: Tx,
  payerOrg: string,
  c: Pick<ChallengeRow, 'amount' | 'pay_to'>,
): Promise<{ dailyCap: bigint | null; reasons: DeclineReason[] }> {
  // the day's total is read with the policy (one statement), whether or not a daily cap is set
  const row = await policyWithSpent(tx, payerOrg)
  const p: PolicyRow = row.paused === null ? NONE : { ...row, paused: row.paused }
  const amount = BigInt(c.amount)
  const dailyCap = p.daily_cap === null ? null : BigInt(p.daily_cap)
  const reasons: DeclineReason[] = []
  if (amount <= 0n) reasons.push('spend_non_positive_amount')
  if (p.paused) reasons.push('paused')
  if (p.per_payment_cap !== null && amount > BigInt(p.per_payment_cap)) reasons.push('per_payment_cap')
  if (dailyCap !== null && BigInt(row.spent) + amount > dailyCap) reasons.push('daily_cap')
  if (p.payee_allowlist && !p.payee_allowlist.includes(c.pay_to.toLowerCase())) reasons.push('allowlist')
  return { dailyCap, reasons }
}

export const declinedError = (reasons: DeclineReason[]) =>
  new ApiError('payment_declined', `payment: declined by the spend policy (${reasons.join(', ')})`, { reasons, failure_category: 'declined' })
