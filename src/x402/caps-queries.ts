/** The x402_settle_caps table: the operator's overrides of a payee's settle caps (null: the default). */
import type { Sql, Tx } from '../db/client'
import { periodTotal } from './totals-queries'

export interface CapsRow {
  daily: string | null
  monthly: string | null
  per_settle: string | null
}

/** The organization's overrides, if any. */
export async function settleCapsRow(sql: Sql | Tx, orgId: string): Promise<CapsRow | undefined> {
  const [row] = await sql<CapsRow[]>`select daily::text, monthly::text, per_settle::text from x402_settle_caps where org_id = ${orgId}`
  return row
}

/** The payee's overrides (all null without a row) and what it received this UTC day and month (totals-queries.ts), in one statement. */
export async function capsWithReceived(tx: Tx, payeeOrg: string): Promise<CapsRow & { day: string; month: string }> {
  const [row] = await tx<(CapsRow & { day: string; month: string })[]>`
    select c.daily::text, c.monthly::text, c.per_settle::text, ${periodTotal(tx, payeeOrg, 'received', 'day')} as day, ${periodTotal(tx, payeeOrg, 'received', 'month')} as month
      from (values (1)) as one left join x402_settle_caps c on c.org_id = ${payeeOrg}`
  return row!
}

/** Writes the organization's overrides (null: the default). */
export async function upsertSettleCaps(sql: Sql, orgId: string, caps: CapsRow): Promise<void> {
  await sql`
    insert into x402_settle_caps (org_id, daily, monthly, per_settle) values (${orgId}, ${caps.daily}, ${caps.monthly}, ${caps.per_settle})
    on conflict (org_id) do update set daily = excluded.daily, monthly = excluded.monthly, per_settle = excluded.per_settle, updated_at = now()`
}
