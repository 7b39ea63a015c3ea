/** The delivery history: list, read, replay. */
import { emailsAs } from '../mail/email-queries'
import type { AppContext } from '../context'
import type { Sql } from '../db/client'
import { errors } from '../errors'
import { listPage, listPagesOf, type PageRequest } from '../http/pagination'
import { rateLimitError, rateLimiter } from '../http/rate-limit'
import { afterShown, iso, parseTimestamp } from '../http/timestamps'
import { attemptDelivery, type DeliveryStatus } from './attempt'

/** Replays an organization may request per minute. */
export const REPLAYS_PER_MINUTE = 30

interface DeliveryRow {
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

export const presentDelivery = (d: DeliveryRow) => ({
  id: d.id,
  org_id: d.org_id,
  email_id: d.email_id,
  endpoint_id: d.endpoint_id,
  endpoint_url: d.endpoint_url,
  event_id: d.event_id,
  event_type: d.event_type,
  status: d.status,
  attempt_count: d.attempt_count,
  duration_ms: d.duration_ms,
  response_status: d.response_status,
  last_error: d.last_error,
  last_error_code: d.last_error_code,
  created_at: iso(d.created_at)!,
  updated_at: iso(d.updated_at)!,
  email: { sender: d.sender, recipient: d.recipient?.[0] ?? null, subject: d.subject },
})

export interface DeliveryFilters {
  emailId?: string
  status?: DeliveryStatus
  dateFrom: Date | null
  dateTo: Date | null
}

/** The filters of a deliveries list (REST query or tool arguments), timestamps parsed. */
export const deliveryFilters = (q: { email_id?: string; status?: DeliveryStatus; date_from?: string; date_to?: string }): DeliveryFilters => ({
  emailId: q.email_id,
  status: q.status,
  dateFrom: q.date_from ? parseTimestamp('date_from', q.date_from) : null,
  dateTo: q.date_to ? parseTimestamp('date_to', q.date_to) : null,
})

const deliveryColumns = (sql: Sql) => sql`
  d.id, d.org_id, d.email_id, d.endpoint_id, d.endpoint_url, d.event_id, d.event_type, d.status, d.attempt_count,
  d.duration_ms, d.response_status, d.last_error, d.last_error_code, d.created_at, d.updated_at,
  em.from_address as sender, em.rcpt_to as recipient, em.subject`

const withEmail = (sql: Sql) => sql`left join ${emailsAs(sql, 'em')} on em.id = d.email_id`

export async function listDeliveries(sql: Sql, orgId: string, page: PageRequest, f: DeliveryFilters) {
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

export async function getDelivery(sql: Sql, orgId: string, id: string): Promise<DeliveryRow> {
  const [row] = await sql<DeliveryRow[]>`
    select ${deliveryColumns(sql)} from webhook_deliveries d ${withEmail(sql)} where d.id = ${id} and d.org_id = ${orgId}`
  if (!row) throw errors.notFound('delivery')
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

/** Sends the stored event again, with its original id, to its original endpoint; now, in this request. */
export async function replayDelivery(ctx: AppContext, orgId: string, id: string) {
  const [row] = await ctx.sql<{ email_id: string | null; deactivated: boolean }[]>`
    select d.email_id, e.deactivated_at is not null as deactivated
      from webhook_deliveries d join endpoints e on e.id = d.endpoint_id
     where d.id = ${id} and d.org_id = ${orgId}`
  if (!row) throw errors.notFound('delivery')
  if (!row.email_id) throw errors.conflict('delivery: only email deliveries can be replayed')
  if (row.deactivated) throw errors.conflict('delivery: its endpoint was deleted; replay is refused')
  const decision = await rateLimiter(ctx).take(`replay:${orgId}`, REPLAYS_PER_MINUTE)
  if (!decision.allowed) throw rateLimitError(decision, 'rate_limited', 'webhook replay')
  const result = await attemptDelivery(ctx, id, { last: true, replay: true })
  const delivered = result.status === 'delivered' || result.status === 'header_confirmed'
  return { delivered: delivered ? 1 : 0, failed: delivered ? 0 : 1 }
}
