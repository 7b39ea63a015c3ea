/** The statements of bounces and suppressions: the suppressions table, and a send's recipient reports. */
import { randomUUIDv7 } from 'bun'
import type postgres from 'postgres'
import type { Tx } from '../db/client'
import { emailsAs } from '../mail/email-queries'
import { listPage, type PageRequest } from '../http/pagination'
import type { RecipientReport, SuppressionReason } from './recipient-reports'

export interface SuppressionRow {
  id: string
  org_id: string
  address: string
  reason: SuppressionReason
  detail: string | null
  send_id: string | null
  created_at: Date
}

/** A message the organization sent through a send, found by its Message-ID. */
export interface SentMessage {
  send_id: string
  /** the send's sender */
  from_address: string
  email_id: string
  /** its envelope recipients, lowercased */
  rcpt_to: string[]
}

/**
 * The send whose message has this Message-ID, in this organization only: the send whose last
 * message it is, else the repeating send whose thread (and sender) it is in (an earlier tick).
 * Each lookup is an index scan (sql/0041), however many sends the organization has.
 */
export async function findSentMessage(tx: Tx, orgId: string, messageId: string): Promise<SentMessage | null> {
  const [row] = await tx<SentMessage[]>`
    select s.id as send_id, s.from_address, e.id as email_id, array(select lower(r) from unnest(e.rcpt_to) r) as rcpt_to
      from ${emailsAs(tx, 'e')}
     cross join lateral (
       (select id, from_address, 0 as preference from sends where last_email_id = e.id)
       union all
       (select id, from_address, 1 from sends
         where thread_id = e.thread_id and repeat_every_minutes is not null and org_id = e.org_id and from_address = lower(e.mail_from)
         order by id desc limit 1)
       order by preference limit 1) s
     where e.org_id = ${orgId} and e.message_id = ${messageId} and e.direction = 'outbound'
     limit 1`
  return row ?? null
}

/** How much a report says: a complaint over a hard bounce over a soft one (none: 0). */
export const reportRank = (r: Pick<RecipientReport, 'status' | 'bounce_type'>) => (r.status === 'complained' ? 3 : r.bounce_type === 'hard' ? 2 : 1)

/**
 * Records what became of a recipient of a send, unless a stronger report is recorded already (a
 * soft bounce does not undo a hard one). Returns whether it was recorded.
 */
export async function recordRecipientReport(tx: Tx, orgId: string, sendId: string, address: string, report: RecipientReport): Promise<boolean> {
  const old = tx`s.recipient_reports -> ${address}::text`
  const rows = await tx`
    update sends s set recipient_reports = s.recipient_reports || jsonb_build_object(${address}::text, ${tx.json(report as never)}::jsonb), updated_at = now()
     where s.id = ${sendId} and s.org_id = ${orgId}
       and case when ${old} ->> 'status' = 'complained' then 3 when ${old} ->> 'bounce_type' = 'hard' then 2
                when ${old} ->> 'bounce_type' = 'soft' then 1 else 0 end <= ${reportRank(report)}
    returning s.id`
  return rows.length > 0
}

/** Adds addresses to the organization's suppression list; an address already listed keeps its entry. Returns the rows added. */
export function addSuppressions(
  tx: Tx,
  entries: { orgId: string; address: string; reason: SuppressionReason; detail: string | null; sendId: string | null }[],
): Promise<SuppressionRow[]> {
  if (!entries.length) return Promise.resolve([])
  const rows = entries.map(e => ({
    id: randomUUIDv7(),
    org_id: e.orgId,
    address: e.address.toLowerCase(),
    reason: e.reason,
    detail: e.detail,
    send_id: e.sendId,
  }))
  return tx<SuppressionRow[]>`
    insert into suppressions (id, org_id, address, reason, detail, send_id)
    select id, org_id, address, reason, detail, send_id
      from jsonb_to_recordset(${tx.json(rows as never)}::jsonb) as x(id uuid, org_id uuid, address text, reason text, detail text, send_id uuid)
    on conflict (org_id, address) do nothing
    returning *`
}

/** An address's entry, as the suppression gate reads it. */
export type Suppressed = Pick<SuppressionRow, 'address' | 'reason' | 'detail' | 'send_id'>

/**
 * A column of the statement that reads a send's facts: the entries of `addresses` on the list
 * of the organization `org` (a column of that statement), as a JSON array of `Suppressed`, so
 * the gate costs no round trip of its own.
 */
export const suppressedColumn = (tx: Tx, org: postgres.Fragment, addresses: string[]) => tx`
  (select coalesce(json_agg(json_build_object('address', s.address, 'reason', s.reason, 'detail', s.detail, 'send_id', s.send_id)), '[]')
     from suppressions s where s.org_id = ${org} and s.address = any(${addresses.map(a => a.toLowerCase())}::text[])) as suppressed`

/** The entries of these addresses (lowercased) on the organization's list. */
export const suppressedAmong = (tx: Tx, orgId: string, addresses: string[]) =>
  tx<SuppressionRow[]>`select * from suppressions where org_id = ${orgId} and address = any(${addresses}::text[])`

export const listSuppressionRows = (sql: Tx, orgId: string, page: PageRequest) =>
  listPage<SuppressionRow>(sql, { columns: sql`*`, from: sql`suppressions`, where: sql`org_id = ${orgId}`, page })

export async function findSuppression(sql: Tx, orgId: string, address: string): Promise<SuppressionRow | null> {
  const [row] = await sql<SuppressionRow[]>`select * from suppressions where org_id = ${orgId} and address = ${address}`
  return row ?? null
}

export async function deleteSuppressionRow(sql: Tx, orgId: string, address: string): Promise<SuppressionRow | null> {
  const [row] = await sql<SuppressionRow[]>`delete from suppressions where org_id = ${orgId} and address = ${address} returning *`
  return row ?? null
}
