/**
 * The spend policy of a paying organization: a kill switch, a per-payment cap, a per-UTC-day
 * cap and an optional payee allowlist. A refusal leaves the challenge pending and is recorded
 * in the payer's declined payments.
 */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import { ApiError } from '../errors'
import type { ChallengeRow } from './challenges.service'
import { periodTotal } from './totals'

export type DeclineReason = 'paused' | 'per_payment_cap' | 'daily_cap' | 'allowlist' | 'spend_non_positive_amount'

interface PolicyRow {
  paused: boolean
  per_payment_cap: string | null
  daily_cap: string | null
  payee_allowlist: string[] | null
  updated_at: Date | null
}

const NONE: PolicyRow = { paused: false, per_payment_cap: null, daily_cap: null, payee_allowlist: null, updated_at: null }

export async function getSpendPolicy(sql: Sql | Tx, orgId: string): Promise<PolicyRow> {
  const [row] = await sql<PolicyRow[]>`
    select paused, per_payment_cap::text, daily_cap::text, payee_allowlist, updated_at from x402_spend_policies where org_id = ${orgId}`
  return row ?? NONE
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
    const [row] = await tx<PolicyRow[]>`
      insert into x402_spend_policies (org_id, paused, per_payment_cap, daily_cap, payee_allowlist, updated_at)
      values (${orgId}, ${next.paused}, ${next.per_payment_cap}, ${next.daily_cap}, ${next.payee_allowlist}, now())
      on conflict (org_id) do update set paused = excluded.paused, per_payment_cap = excluded.per_payment_cap,
        daily_cap = excluded.daily_cap, payee_allowlist = excluded.payee_allowlist, updated_at = now()
      returning paused, per_payment_cap::text, daily_cap::text, payee_allowlist, updated_at`
    return row!
  })
}

/**
 * What the payer's policy says about paying this challenge now, counting what it already paid
 * (or has in flight) this UTC day (totals.ts), with its daily cap: the claim's own statement
 * checks the day's sum again as it adds to it, so concurrent claims cannot together pass it.
 */
export async function declineReasons(
  tx: Tx,
  payerOrg: string,
  c: Pick<ChallengeRow, 'amount' | 'pay_to'>,
): Promise<{ dailyCap: bigint | null; reasons: DeclineReason[] }> {
  // the day's total is read with the policy (one statement), whether or not a daily cap is set
  const [row] = await tx<(Omit<PolicyRow, 'paused'> & { paused: boolean | null; spent: string })[]>`
    select p.paused, p.per_payment_cap::text, p.daily_cap::text, p.payee_allowlist, p.updated_at,
           ${periodTotal(tx, payerOrg, 'sent', 'day')} as spent
      from (values (1)) as one left join x402_spend_policies p on p.org_id = ${payerOrg}`
  const p: PolicyRow = row!.paused === null ? NONE : { ...row!, paused: row!.paused }
  const amount = BigInt(c.amount)
  const dailyCap = p.daily_cap === null ? null : BigInt(p.daily_cap)
  const reasons: DeclineReason[] = []
  if (amount <= 0n) reasons.push('spend_non_positive_amount')
  if (p.paused) reasons.push('paused')
  if (p.per_payment_cap !== null && amount > BigInt(p.per_payment_cap)) reasons.push('per_payment_cap')
  if (dailyCap !== null && BigInt(row!.spent) + amount > dailyCap) reasons.push('daily_cap')
  if (p.payee_allowlist && !p.payee_allowlist.includes(c.pay_to.toLowerCase())) reasons.push('allowlist')
  return { dailyCap, reasons }
}

export async function recordDecline(sql: Sql, payerOrg: string, c: ChallengeRow, reasons: DeclineReason[]) {
  await sql`
    insert into x402_declined_payments (id, org_id, challenge_id, network, amount, pay_to, reasons)
    values (${randomUUIDv7()}, ${payerOrg}, ${c.id}, ${c.network}, ${c.amount}, ${c.pay_to}, ${reasons})`
}

export const declinedError = (reasons: DeclineReason[]) =>
  new ApiError('payment_declined', `payment: declined by the spend policy (${reasons.join(', ')})`, { reasons, failure_category: 'declined' })
