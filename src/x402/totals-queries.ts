/**
 * Running totals of settlements by organization, direction and UTC period (sql/0031): what a
 * payee's settle caps (its day and month received) and a payer's daily spend cap (its day sent)
 * count, settled and in-flight settlements alike. A claim adds its amount to the current periods
 * in its own statement, each only within its cap (`addClaimToTotals`); a settlement that fails
 * takes it off the periods it was claimed in (`takeFailureFromTotals`). Both touch the rows in one
 * order, the primary key's, so claims and failures' records that share rows never wait for each
 * other in a cycle.
 */
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'

type Direction = 'received' | 'sent'
type Span = 'day' | 'month'
interface TotalKey {
  org: string
  direction: Direction
  span: Span
}

/** The period of `span` that `at` (an SQL timestamptz) falls in, as its first UTC day. */
const periodOf = (tx: Tx, span: Span | postgres.Fragment, at: postgres.Fragment) => tx`date_trunc(${span}, ${at} at time zone 'utc')::date`

/** The current period's total of one organization, direction and span, as text (an SQL expression). */
export const periodTotal = (tx: Tx, org: string, direction: Direction, span: Span) =>
  tx`coalesce((select amount from x402_totals where org_id = ${org} and direction = ${direction} and span = ${span} and start = ${periodOf(tx, span, tx`now()`)}), 0)::text`

/** The totals a settlement counts in, in the primary key's order: its payee's day and month, and its paying organization's day. */
function keysOf(s: { payee_org: string; payer_org: string | null }): TotalKey[] {
  const keys: TotalKey[] = [
    { org: s.payee_org, direction: 'received', span: 'day' },
    { org: s.payee_org, direction: 'received', span: 'month' },
  ]
  if (s.payer_org) keys.push({ org: s.payer_org, direction: 'sent', span: 'day' })
  // uuids order as their lowercase text, the directions and spans alphabetically
  const order = (k: TotalKey) => `${k.org} ${k.direction} ${k.span}`
  return keys.sort((a, b) => (order(a) < order(b) ? -1 : 1))
}

/** The caps of a claim's totals (null: none), as its decision read them. */
export interface TotalCaps {
  received: { day: bigint; month: bigint }
  sent: { day: bigint | null }
}

/** The check constraint a claim's statement violates when one of its totals would pass its cap (sql/0031). */
const WITHIN_CAPS = 'x402_within_caps_check'

/** Whether `error` is a claim's statement refusing to pass a cap: the claim is to be decided again. */
export const isOverCaps = (error: unknown) => (error as { constraint_name?: string } | null)?.constraint_name === WITHIN_CAPS

/**
 * Adds a claim's amount to its totals, each only within its cap: CTEs of the claim's statement,
 * given the name of the CTE that returns the claim's row (nothing is added when the insert did not
 * happen). An update waits for a concurrent claim's to commit and checks the cap on the row it
 * commits, so two claims cannot together pass a cap. `withinCaps` is the expression that fails the
 * statement when a total was not added (the claim is then rolled back: `isOverCaps`).
 */
export function addClaimToTotals(tx: Tx, claim: string, s: { payee_org: string; payer_org: string | null; amount: string }, caps: TotalCaps) {
  const keys = keysOf(s)
  const capOf = (k: TotalKey) => (k.direction === 'received' ? caps.received[k.span] : caps.sent.day)?.toString() ?? null
  return {
    ctes: tx`
      total_keys as (
        select * from unnest(${keys.map(k => k.org)}::uuid[], ${keys.map(k => k.direction)}::text[], ${keys.map(k => k.span)}::text[], ${keys.map(capOf)}::numeric[])
          with ordinality as k(org_id, direction, span, cap, n)),
      totals as (
        insert into x402_totals as t (org_id, direction, span, start, amount)
        select k.org_id, k.direction, k.span, ${periodOf(tx, tx`k.span`, tx`now()`)}, ${s.amount}::numeric
          from ${tx(claim)}, total_keys k
         where ${s.amount}::numeric <= coalesce(k.cap, ${s.amount}::numeric)
         order by k.n
        on conflict (org_id, direction, span, start) do update set amount = t.amount + excluded.amount
         where t.amount + excluded.amount <= coalesce(
           (select k.cap from total_keys k where k.org_id = t.org_id and k.direction = t.direction and k.span = t.span), t.amount + excluded.amount)
        returning 1)`,
    withinCaps: tx`((select count(*) from totals) = ${keys.length})::x402_within_caps`,
  }
}

/**
 * Takes a failing settlement's amount off the totals of the periods it was claimed in: one
 * statement per row, in key order, each sent at the call. Does nothing for a settlement no longer
 * pending, so send them ahead of the statement that records the failure.
 */
export function takeFailureFromTotals(tx: Tx, s: { id: string; payee_org: string; payer_org: string | null }) {
  return keysOf(s).map(k =>
    tx`
      update x402_totals t set amount = t.amount - s.amount
        from x402_settlements s
       where s.id = ${s.id} and s.status = 'pending'
         and t.org_id = ${k.org} and t.direction = ${k.direction} and t.span = ${k.span} and t.start = ${periodOf(tx, k.span, tx`s.created_at`)}`.execute(),
  )
}

/** The cleanup job's part: periods no cap counts any more (days older than yesterday, months older than last month). */
export async function pruneTotals(sql: Sql): Promise<number> {
  return (
    await sql`
    delete from x402_totals where start < (now() at time zone 'utc')::date - case span when 'day' then 2 else 62 end`
  ).count
}
