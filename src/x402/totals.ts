/**
 * Running totals of settlements by organization, direction and UTC period (sql/0031): what a
 * payee's settle caps (its day and month received) and a payer's daily spend cap (its day sent)
 * count, settled and in-flight settlements alike. A claim adds its amount to the current periods
 * in its own statement (`addClaimToTotals`); a settlement that fails takes it off the periods it
 * was claimed in (`takeFailureFromTotals`). Both touch the rows in one order, the primary key's,
 * so a claim and a failure's record that share rows never wait for each other in a cycle.
 */
import type postgres from 'postgres'
import type { Tx } from '../db/client'

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
  // uuids order as their lowercase text; the directions and spans alphabetically
  return keys.sort((a, b) => (a.org < b.org ? -1 : a.org > b.org ? 1 : a.direction < b.direction ? -1 : a.direction > b.direction ? 1 : a.span < b.span ? -1 : 1))
}

/**
 * Adds a claim's amount to its totals: a part of the claim's statement, given the name of the CTE
 * that returns the claim's row (nothing is added when the insert did not happen).
 */
export function addClaimToTotals(tx: Tx, claim: string, s: { payee_org: string; payer_org: string | null; amount: string }) {
  const keys = keysOf(s)
  return tx`
    insert into x402_totals as t (org_id, direction, span, start, amount)
    select k.org_id, k.direction, k.span, ${periodOf(tx, tx`k.span`, tx`now()`)}, ${s.amount}::numeric
      from ${tx(claim)}, unnest(${keys.map(k => k.org)}::uuid[], ${keys.map(k => k.direction)}::text[], ${keys.map(k => k.span)}::text[]) with ordinality as k(org_id, direction, span, n)
     order by k.n
    on conflict (org_id, direction, span, start) do update set amount = t.amount + excluded.amount`
}

/**
 * Takes a failing settlement's amount off the totals of the periods it was claimed in: one
 * statement per row, in key order, each sent at the call. Does nothing for a settlement no longer
 * pending, so send them ahead of the statement that records the failure.
 */
export function takeFailureFromTotals(tx: Tx, s: { id: string; payee_org: string; payer_org: string | null }) {
  return keysOf(s).map(
    k => tx`
      update x402_totals t set amount = t.amount - s.amount
        from x402_settlements s
       where s.id = ${s.id} and s.status = 'pending'
         and t.org_id = ${k.org} and t.direction = ${k.direction} and t.span = ${k.span} and t.start = ${periodOf(tx, k.span, tx`s.created_at`)}`.execute(),
  )
}
