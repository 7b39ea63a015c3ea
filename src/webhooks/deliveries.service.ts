/** The delivery history: list, read, replay. */
import type { AppContext } from '../context'
import type { Sql } from '../db/client'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { rateLimitError, rateLimiter } from '../http/rate-limit'
import { iso, parseTimestamp } from '../http/timestamps'
import { attemptDelivery } from './attempt'
import { type DeliveryFilters, type DeliveryRow, type DeliveryStatus, deliveriesPage, deliveryById, replayFacts } from './delivery-queries'

/** Read by GraphQL's loaders. */

/** Replays an organization may request per minute. */
export const REPLAYS_PER_MINUTE = 30

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

/** The filters of a deliveries list (REST query or tool arguments), timestamps parsed. */
export const deliveryFilters = (q: { email_id?: string; status?: DeliveryStatus; date_from?: string; date_to?: string }): DeliveryFilters => ({
  emailId: q.email_id,
  status: q.status,
  dateFrom: q.date_from ? parseTimestamp('date_from', q.date_from) : null,
  dateTo: q.date_to ? parseTimestamp('date_to', q.date_to) : null,
})

export async function listDeliveries(sql: Sql, orgId: string, page: PageRequest, f: DeliveryFilters) {
  return deliveriesPage(sql, orgId, page, f)
}

export async function getDelivery(sql: Sql, orgId: string, id: string): Promise<DeliveryRow> {
  const row = await deliveryById(sql, orgId, id)
  if (!row) throw errors.notFound('delivery')
  return row
}

/** Sends the stored event again, with its original id, to its original endpoint; now, in this request. */
export async function replayDelivery(ctx: AppContext, orgId: string, id: string) {
  const row = await replayFacts(ctx.sql, orgId, id)
  if (!row) throw errors.notFound('delivery')
  if (!row.email_id) throw errors.conflict('delivery: only email deliveries can be replayed')
  if (row.deactivated) throw errors.conflict('delivery: its endpoint was deleted; replay is refused')
  const decision = await rateLimiter(ctx).take(`replay:${orgId}`, REPLAYS_PER_MINUTE)
  if (!decision.allowed) throw rateLimitError(decision, 'rate_limited', 'webhook replay')
  const result = await attemptDelivery(ctx, id, { last: true, replay: true })
  const delivered = result.status === 'delivered' || result.status === 'header_confirmed'
  return { delivered: delivered ? 1 : 0, failed: delivered ? 0 : 1 }
}
