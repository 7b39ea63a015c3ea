/** The ledger (received and sent rows) and the declined payments of an organization. */
import type { Sql } from '../db/client'
import type { PageRequest } from '../http/pagination'
import { ledgerPage, ledgerRows, type LedgerFilters, type LedgerRow } from './ledger-queries'
import { declinedPage, type DeclinedRow } from './policy-queries'

export type { LedgerFilters }

/** a CSV export carries at most this many rows; beyond, it is cut and says so (X-Truncated) */
export const CSV_MAX_ROWS = 10_000
const COLUMNS = [
  'id',
  'challenge_id',
  'direction',
  'status',
  'amount',
  'asset',
  'network',
  'counterparty',
  'settle_tx',
  'failure_reason',
  'created_at',
  'updated_at',
] as const

export const presentLedgerRow = (r: LedgerRow) => ({ ...r, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() })

/** A page of the organization's ledger. */
export function listLedger(sql: Sql, orgId: string, page: PageRequest, f: LedgerFilters) {
  return ledgerPage(sql, orgId, page, f)
}

const csvCell = (v: unknown) => {
  const s = v === null || v === undefined ? '' : v instanceof Date ? v.toISOString() : String(v)
  // quote what needs it; a leading = + - @ is neutralized so a spreadsheet does not run it as a formula
  const safe = /^[=+\-@]/.test(s) ? `'${s}` : s
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe
}

/** The filtered ledger as CSV, newest first, at most CSV_MAX_ROWS rows. */
export async function ledgerCsv(sql: Sql, orgId: string, f: LedgerFilters): Promise<{ csv: string; truncated: boolean }> {
  const rows = await ledgerRows(sql, orgId, f, CSV_MAX_ROWS + 1)
  const truncated = rows.length > CSV_MAX_ROWS
  const lines = [COLUMNS.join(','), ...rows.slice(0, CSV_MAX_ROWS).map(r => COLUMNS.map(c => csvCell(r[c])).join(','))]
  return { csv: lines.join('\r\n') + '\r\n', truncated }
}

export const presentDeclined = (r: DeclinedRow) => ({ ...r, created_at: r.created_at.toISOString() })

/** A page of the organization's declined payments. */
export function listDeclined(sql: Sql, orgId: string, page: PageRequest) {
  return declinedPage(sql, orgId, page)
}
