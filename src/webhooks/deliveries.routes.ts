/** GET /v1/webhooks/deliveries, one delivery, and replay. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { Nullable, OneOf, IdParams } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { getDelivery, listDeliveries, presentDelivery, replayDelivery, REPLAYS_PER_MINUTE } from './deliveries.service'
import { STATUSES, Delivery } from './deliveries.model'

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
      params: IdParams,
      response: { 200: Ok(Delivery) },
      detail: { summary: 'One webhook delivery' },
    })
    .post('/:id/replay', ({ auth, params }) => replayDelivery(ctx, auth.orgId, params.id), {
      params: IdParams,
      response: { 200: Ok(t.Object({ delivered: t.Integer(), failed: t.Integer() })) },
      detail: {
        summary: 'Replay a delivery',
        description: `Sends the stored payload with its original event id to its original endpoint (also when the endpoint is disabled), in this request. 409 conflict when the endpoint was deleted. At most ${REPLAYS_PER_MINUTE} replays per minute per organization (429 rate_limited).`,
      },
    })
}
