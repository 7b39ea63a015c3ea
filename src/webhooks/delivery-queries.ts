/**
 * The webhook_deliveries table: its row types and the statements of the delivery history and of
 * attempts (the insert of a received email's delivery, which its job is enqueued with, too).
 * The deliveries of events that are no email, which other features create: queries.ts.
 */
import type { Sql, Tx } from '../db/client'
import { listPage, listPagesOf, type PageRequest } from '../http/pagination'
import { afterShown } from '../http/timestamps'
import { emailsAs } from '../mail/email-queries'
import type { STATUSES } from './deliveries.model'
import type { EmailEvent } from './payload'

export type DeliveryStatus = (typeof STATUSES)[number]

/** A delivery as the history shows it, with the sender, recipients and subject of its email. */
export interface DeliveryRow {
  id: string
  org_id: string
  email_id: string | null
  endpoint_id: string
  endpoint_url: string
  event_id: string
  event_type: string
  status: DeliveryStatus
  attempt_count: number
  duration_ms: number | null
  response_status: number | null
  last_error: string | null
  last_error_code: string | null
  created_at: Date
  updated_at: Date
  sender: string | null
  recipient: string[] | null
  subject: string | null
}

export interface DeliveryFilters {
  emailId?: string
  status?: DeliveryStatus
  dateFrom: Date | null
  dateTo: Date | null
}

const deliveryColumns = (sql: Sql) => sql`
  d.id, d.org_id, d.email_id, d.endpoint_id, d.endpoint_url, d.event_id, d.event_type, d.status, d.attempt_count,
  d.duration_ms, d.response_status, d.last_error, d.last_error_code, d.created_at, d.updated_at,
  em.from_address as sender, em.rcpt_to as recipient, em.subject`

const withEmail = (sql: Sql) => sql`left join ${emailsAs(sql, 'em')} on em.id = d.email_id`

/** A page of the organization's deliveries that match the filters, newest first. */
export function deliveriesPage(sql: Sql, orgId: string, page: PageRequest, f: DeliveryFilters) {
  const matching = sql`
    d.org_id = ${orgId}
    ${f.emailId ? sql`and d.email_id = ${f.emailId}` : sql``}
    ${f.status ? sql`and d.status = ${f.status}` : sql``}
    ${f.dateFrom ? sql`and d.created_at >= ${f.dateFrom}` : sql``}
    ${f.dateTo ? sql`and d.created_at < ${afterShown(f.dateTo)}` : sql``}`
  return listPage<DeliveryRow>(sql, {
    columns: deliveryColumns(sql),
    from: sql`webhook_deliveries d`,
    join: withEmail(sql),
    where: matching,
    page,
    idColumn: 'd.id',
  })
}

export async function deliveryById(sql: Sql, orgId: string, id: string): Promise<DeliveryRow | undefined> {
  const [row] = await sql<DeliveryRow[]>`
    select ${deliveryColumns(sql)} from webhook_deliveries d ${withEmail(sql)} where d.id = ${id} and d.org_id = ${orgId}`
  return row
}

/** Deliveries by id, in any order, for readers that batch (GraphQL). */
export async function deliveriesByIds(sql: Sql, orgId: string, ids: readonly string[]): Promise<DeliveryRow[]> {
  return sql<DeliveryRow[]>`select ${deliveryColumns(sql)} from webhook_deliveries d ${withEmail(sql)} where d.id = any(${ids}::uuid[]) and d.org_id = ${orgId}`
}

/** A page of the deliveries (newest first) of each of several endpoints, in two statements. */
export function endpointDeliveryPages(sql: Sql, orgId: string, endpointIds: string[], page: PageRequest) {
  return listPagesOf<DeliveryRow>(sql, {
    columns: deliveryColumns(sql),
    from: sql`webhook_deliveries d`,
    join: withEmail(sql),
    where: sql`d.org_id = ${orgId}`,
    parentColumn: 'd.endpoint_id',
    parents: endpointIds,
    page,
    idColumn: 'd.id',
  })
}

/** What decides whether a delivery may be replayed: its email, and whether its endpoint was deactivated. */
export async function replayFacts(sql: Sql, orgId: string, id: string): Promise<{ email_id: string | null; deactivated: boolean } | undefined> {
  const [row] = await sql<{ email_id: string | null; deactivated: boolean }[]>`
    select d.email_id, e.deactivated_at is not null as deactivated
      from webhook_deliveries d join endpoints e on e.id = d.endpoint_id
     where d.id = ${id} and d.org_id = ${orgId}`
  return row
}

/** A delivery as an attempt reads it. */
export interface AttemptRow {
  id: string
  org_id: string
  event_id: string
  status: DeliveryStatus
  endpoint_url: string
  payload: EmailEvent
  discarded: boolean
  /** the attempt this is, once counted; null when it is not to be sent */
  attempt_count: number | null
}

/**
 * Loads the deliveries and counts an attempt at each one that is to be sent (pending, or any
 * status for a `replay`, and its content not discarded), in one statement.
 */
export function countAttempts(sql: Sql, ids: string[], replay: boolean) {
  return sql<AttemptRow[]>`
    with d as (
      select d.id, d.org_id, d.event_id, d.status, d.endpoint_url, d.payload, em.content_discarded_at is not null as discarded
        from webhook_deliveries d left join ${emailsAs(sql, 'em')} on em.id = d.email_id
       where d.id = any(${ids}::uuid[])),
    counted as (
      update webhook_deliveries w set attempt_count = w.attempt_count + 1, updated_at = now()
        from d
       where w.id = d.id and not d.discarded and (d.status = 'pending' or ${replay})
      returning w.id, w.attempt_count)
    select d.*, counted.attempt_count from d left join counted on counted.id = d.id`
}

/** The outcome of an attempt, to record. */
export interface DeliveryOutcome {
  id: string
  status: DeliveryStatus
  durationMs?: number
  responseStatus?: number | null
  error?: string
  code?: string
}

/** A delivery as an outcome left it. */
export interface SettledRow {
  id: string
  org_id: string
  email_id: string
  endpoint_id: string
  event_id: string
  status: string
  last_error_code: string | null
  attempt_count: number
}

/** Records the outcomes (one per delivery) in one statement. */
export function recordOutcomes(tx: Tx, outcomes: DeliveryOutcome[]) {
  const column = <T>(pick: (o: DeliveryOutcome) => T | undefined) => outcomes.map(o => pick(o) ?? null)
  return tx<SettledRow[]>`
    update webhook_deliveries w
       set status = v.status, duration_ms = v.duration_ms, response_status = v.response_status,
           last_error = v.last_error, last_error_code = v.last_error_code, updated_at = now()
      from unnest(${column(o => o.id)}::uuid[], ${column(o => o.status)}::text[], ${column(o => o.durationMs)}::int[],
                  ${column(o => o.responseStatus)}::int[], ${column(o => o.error)}::text[], ${column(o => o.code)}::text[])
           as v(id, status, duration_ms, response_status, last_error, last_error_code)
     where w.id = v.id
    returning w.id, w.org_id, w.email_id, w.endpoint_id, w.event_id, w.status, w.last_error_code, w.attempt_count`
}

/** A received email's delivery to one endpoint: pending, or `skipped_by_rules` with the reason. */
export interface EmailDelivery {
  id: string
  orgId: string
  emailId: string
  endpointId: string
  endpointUrl: string
  eventId: string
  eventType: string
  status: 'pending' | 'skipped_by_rules'
  skipped: string | null
  payload: unknown
}

/** Inserts the delivery, not awaited: the caller enqueues its job with it (`enqueueWith`) or awaits it. */
export function insertEmailDelivery(tx: Tx, d: EmailDelivery) {
  return tx`
    insert into webhook_deliveries (id, org_id, email_id, endpoint_id, endpoint_url, event_id, event_type, status, last_error, payload)
    values (${d.id}, ${d.orgId}, ${d.emailId}, ${d.endpointId}, ${d.endpointUrl}, ${d.eventId},
            ${d.eventType}, ${d.status}, ${d.skipped}, ${tx.json(d.payload as never)})`
}
