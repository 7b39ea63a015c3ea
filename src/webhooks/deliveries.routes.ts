/** GET /v1/webhooks/deliveries, one delivery, and replay. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { OneOf, IdParams } from '../http/schema'
import { Timestamp } from '../http/timestamps'
import { deliveryFilters, getDelivery, listDeliveries, presentDelivery, replayDelivery, REPLAYS_PER_MINUTE } from './deliveries.service'
import { STATUSES, Delivery } from './deliveries.model'

export function deliveryRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/webhooks/deliveries', tags: ['Webhook deliveries'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query }) => {
        const filters = deliveryFilters(query)
        return cursors(ctx).read('deliveries', query, page => listDeliveries(ctx.sql, auth.orgId, page, filters), presentDelivery)
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
