/** The x402_ledger table's reads: an organization's received and sent rows (the claim and its outcome write them: settlement-queries.ts). */
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import { afterShown } from '../http/timestamps'
import type { LedgerRow as LedgerRecord, Stored } from './model'

export type LedgerRow = Stored<typeof LedgerRecord, 'created_at' | 'updated_at'>

export interface LedgerFilters {
  status?: string
  direction?: string
  network?: string
  createdAfter?: Date | null
  createdBefore?: Date | null
}

const columns = (sql: Sql | Tx) =>
  sql`id, challenge_id, direction, status, amount::text as amount, asset, network, counterparty, settle_tx, failure_reason, created_at, updated_at`

function where(sql: Sql | Tx, orgId: string, f: LedgerFilters) {
  return sql`org_id = ${orgId}
    ${f.status ? sql`and status = ${f.status}` : sql``}
    ${f.direction ? sql`and direction = ${f.direction}` : sql``}
    ${f.network ? sql`and network = ${f.network}` : sql``}
    ${f.createdAfter ? sql`and created_at >= ${f.createdAfter}` : sql``}
    ${f.createdBefore ? sql`and created_at < ${afterShown(f.createdBefore)}` : sql``}`
}

/** A page of the organization's filtered ledger, newest first. */
export function ledgerPage(sql: Sql, orgId: string, page: PageRequest, f: LedgerFilters) {
  return listPage<LedgerRow>(sql as unknown as Tx, { columns: columns(sql), from: sql`x402_ledger`, where: where(sql, orgId, f), page })
}

/** The organization's filtered ledger, newest first, at most `limit` rows. */
export function ledgerRows(sql: Sql, orgId: string, f: LedgerFilters, limit: number): Promise<LedgerRow[]> {
  return sql<LedgerRow[]>`select ${columns(sql)} from x402_ledger where ${where(sql, orgId, f)} order by id desc limit ${limit}`
}
