/** The ledger (received and sent rows) and the declined payments of an organization. */
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import { afterShown } from '../http/timestamps'

export interface LedgerFilters {
  status?: string
  direction?: string
  network?: string
  createdAfter?: Date | null
  createdBefore?: Date | null
}

interface LedgerRowDb {
  id: string
  challenge_id: string
  direction: 'received' | 'sent'
  status: 'pending' | 'settled' | 'failed'
  amount: string
  asset: string
  network: 'base' | 'base-sepolia'
  counterparty: string
  settle_tx: string | null
  failure_reason: string | null
  created_at: Date
  updated_at: Date
}

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

export const presentLedgerRow = (r: LedgerRowDb) => ({ ...r, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() })

export function listLedger(sql: Sql, orgId: string, page: PageRequest, f: LedgerFilters) {
  return listPage<LedgerRowDb>(sql as unknown as Tx, { columns: columns(sql), from: sql`x402_ledger`, where: where(sql, orgId, f), page })
}

const csvCell = (v: unknown) => {
  const s = v === null || v === undefined ? '' : v instanceof Date ? v.toISOString() : String(v)
  // quote what needs it; a leading = + - @ is neutralized so a spreadsheet does not run it as a formula
  const safe = /^[=+\-@]/.test(s) ? `'${s}` : s
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe
}

/** The filtered ledger as CSV, newest first, at most CSV_MAX_ROWS rows. */
export async function ledgerCsv(sql: Sql, orgId: string, f: LedgerFilters): Promise<{ csv: string; truncated: boolean }> {
  const rows = await sql<LedgerRowDb[]>`select ${columns(sql)} from x402_ledger where ${where(sql, orgId, f)} order by id desc limit ${CSV_MAX_ROWS + 1}`
  const truncated = rows.length > CSV_MAX_ROWS
  const lines = [COLUMNS.join(','), ...rows.slice(0, CSV_MAX_ROWS).map(r => COLUMNS.map(c => csvCell(r[c])).join(','))]
  return { csv: lines.join('\r\n') + '\r\n', truncated }
}

interface DeclinedRow {
  id: string
  challenge_id: string
  network: 'base' | 'base-sepolia'
  amount: string
  pay_to: string
  reasons: string[]
  created_at: Date
}

export const presentDeclined = (r: DeclinedRow) => ({ ...r, created_at: r.created_at.toISOString() })

export function listDeclined(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<DeclinedRow>(sql as unknown as Tx, {
    columns: sql`id, challenge_id, network, amount::text as amount, pay_to, reasons, created_at`,
    from: sql`x402_declined_payments`,
    where: sql`org_id = ${orgId}`,
    page,
  })
}
