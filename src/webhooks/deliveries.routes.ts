/** GET /v1/webhooks/deliveries, one delivery, and replay. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { Nullable, OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { getDelivery, listDeliveries, presentDelivery, replayDelivery, REPLAYS_PER_MINUTE } from './deliveries.service'

const STATUSES = ['pending', 'delivered', 'header_confirmed', 'failed', 'skipped_by_rules'] as const

export const Delivery = t.Object({
  id: t.String({ format: 'uuid' }),
  org_id: t.String({ format: 'uuid' }),
  email_id: Nullable(t.String({ format: 'uuid' })),
  endpoint_id: t.String({ format: 'uuid' }),
  endpoint_url: t.String({ description: 'for a function endpoint, function://<id>' }),
  event_id: t.String({ description: 'the `id` of the event: identical across retries and replays' }),
  event_type: t.String(),
  status: OneOf(STATUSES),
  attempt_count: t.Integer(),
  duration_ms: Nullable(t.Integer()),
  response_status: Nullable(t.Integer({ description: 'HTTP status of the last attempt' })),
  last_error: Nullable(t.String()),
  last_error_code: Nullable(t.String({ description: 'http_<status>, content_discarded, superseded, queue_dead_letter; while retrying also timeout, connection_failed or url_refused' })),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
  email: t.Object({ sender: Nullable(t.String()), recipient: Nullable(t.String()), subject: Nullable(t.String()) }),
})

export function deliveryRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/webhooks/deliveries', tags: ['Webhook deliveries'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query }) => {
        const page = cursors(ctx).request('deliveries', query)
        const filters = {
          emailId: query.email_id,
          status: query.status,
          dateFrom: query.date_from ? parseTimestamp('date_from', query.date_from) : null,
          dateTo: query.date_to ? parseTimestamp('date_to', query.date_to) : null,
        }
        const { rows, total } = await listDeliveries(ctx.sql, auth.orgId, page, filters)
        return cursors(ctx).page('deliveries', rows, page, total, presentDelivery)
      },
      {
        query: t.Object({
          ...pageQuery(100, 50),
          email_id: t.Optional(t.String({ format: 'uuid' })),
          status: t.Optional(OneOf(STATUSES)),
          date_from: t.Optional(Timestamp('deliveries created at or after this instant')),
          date_to: t.Optional(Timestamp('deliveries created at or before this instant')),
        }),
        response: { 200: Paged(Delivery) },
        detail: { summary: 'List webhook deliveries, newest first' },
      },
    )
    .get('/:id', async ({ auth, params }) => presentDelivery(await getDelivery(ctx.sql, auth.orgId, params.id)), {
      params: t.Object({ id: t.String({ format: 'uuid' }) }),
      response: { 200: Ok(Delivery) },
      detail: { summary: 'One webhook delivery' },
    })
    .post('/:id/replay', ({ auth, params }) => replayDelivery(ctx, auth.orgId, params.id), {
      params: t.Object({ id: t.String({ format: 'uuid' }) }),
      response: { 200: Ok(t.Object({ delivered: t.Integer(), failed: t.Integer() })) },
      detail: {
        summary: 'Replay a delivery',
        description: `Sends the stored payload with its original event id to its original endpoint (also when the endpoint is disabled), in this request. 409 conflict when the endpoint was deleted. At most ${REPLAYS_PER_MINUTE} replays per minute per organization (429 rate_limited).`,
      },
    })
}
