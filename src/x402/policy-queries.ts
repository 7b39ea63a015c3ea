/** The x402_spend_policies and x402_declined_payments tables: a paying organization's policy and what it refused. */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { ChallengeRow } from './challenge-queries'
import type { DeclinedPayment, SpendPolicy, Stored } from './model'
import { periodTotal } from './totals-queries'

export type PolicyRow = Stored<typeof SpendPolicy, 'updated_at'>

/** The organization's policy, if it set one. */
export async function spendPolicyRow(sql: Sql | Tx, orgId: string): Promise<PolicyRow | undefined> {
  const [row] = await sql<PolicyRow[]>`
    select paused, per_payment_cap::text, daily_cap::text, payee_allowlist, updated_at from x402_spend_policies where org_id = ${orgId}`
  return row
}

/** Writes the organization's whole policy. */
export async function upsertSpendPolicy(tx: Tx, orgId: string, p: Omit<PolicyRow, 'updated_at'>): Promise<PolicyRow> {
  const [row] = await tx<PolicyRow[]>`
    insert into x402_spend_policies (org_id, paused, per_payment_cap, daily_cap, payee_allowlist, updated_at)
    values (${orgId}, ${p.paused}, ${p.per_payment_cap}, ${p.daily_cap}, ${p.payee_allowlist}, now())
    on conflict (org_id) do update set paused = excluded.paused, per_payment_cap = excluded.per_payment_cap,
      daily_cap = excluded.daily_cap, payee_allowlist = excluded.payee_allowlist, updated_at = now()
    returning paused, per_payment_cap::text, daily_cap::text, payee_allowlist, updated_at`
  return row!
}

/**
 * The payer's policy (every column null without one) and what it paid, or has in flight, this
 * UTC day (totals-queries.ts), in one statement.
 */
export async function policyWithSpent(tx: Tx, payerOrg: string): Promise<Omit<PolicyRow, 'paused'> & { paused: boolean | null; spent: string }> {
  const [row] = await tx<(Omit<PolicyRow, 'paused'> & { paused: boolean | null; spent: string })[]>`
    select p.paused, p.per_payment_cap::text, p.daily_cap::text, p.payee_allowlist, p.updated_at,
           ${periodTotal(tx, payerOrg, 'sent', 'day')} as spent
      from (values (1)) as one left join x402_spend_policies p on p.org_id = ${payerOrg}`
  return row!
}

export type DeclinedRow = Stored<typeof DeclinedPayment, 'created_at'>

/** Records a payment the payer's policy refused. */
export async function insertDecline(sql: Sql, payerOrg: string, c: ChallengeRow, reasons: string[]): Promise<void> {
  await sql`
    insert into x402_declined_payments (id, org_id, challenge_id, network, amount, pay_to, reasons)
    values (${randomUUIDv7()}, ${payerOrg}, ${c.id}, ${c.network}, ${c.amount}, ${c.pay_to}, ${reasons})`
}

/** A page of the organization's declined payments, newest first. */
export function declinedPage(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<DeclinedRow>(sql as unknown as Tx, {
    columns: sql`id, challenge_id, network, amount::text as amount, pay_to, reasons, created_at`,
    from: sql`x402_declined_payments`,
    where: sql`org_id = ${orgId}`,
    page,
  })
}
