/** Webhook tools: endpoints (where inbound mail is delivered) and the deliveries made to them, with replay. */
import { Type } from '@sinclair/typebox'
import { OneOf } from '../../http/schema'
import { iso } from '../../http/timestamps'
import { Delivery, STATUSES } from '../../webhooks/deliveries.model'
import { deliveryFilters, getDelivery, listDeliveries, presentDelivery, replayDelivery, REPLAYS_PER_MINUTE } from '../../webhooks/deliveries.service'
import { CreateEndpoint, DeactivatedEndpoint, Endpoint, UpdateEndpoint } from '../../webhooks/endpoints.model'
import { createEndpoint, deactivateEndpoint, getEndpoint, listEndpoints, presentEndpoint, updateEndpoint } from '../../webhooks/endpoints.service'
import { PageInput, PageOf, toolPage } from '../schema'
import { READ, tool, WRITE } from '../tool'

const EndpointId = { endpoint_id: Type.String({ format: 'uuid' }) }
const DeliveryId = { delivery_id: Type.String({ format: 'uuid', description: 'from list_webhook_deliveries' }) }
const Instant = (description: string) => Type.Optional(Type.String({ description: `ISO 8601 instant with Z or an offset; ${description}` }))

export const webhookTools = [
  tool({
    name: 'create_webhook_endpoint',
    title: 'Create a webhook endpoint',
    description:
      'Delivers inbound mail as signed HTTP POSTs to an https URL on the public internet (or to a hosted function). ' +
      'One enabled default endpoint per domain slot and one org-wide fallback (domain_id null): a second is a conflict error.',
    input: CreateEndpoint,
    output: Endpoint,
    annotations: { ...WRITE, openWorldHint: true },
    rest: { method: 'POST', path: '/v1/endpoints' },
    handle: async ({ ctx, auth }, args) => presentEndpoint((await createEndpoint(ctx.sql, ctx, auth.orgId, args)).row),
  }),
  tool({
    name: 'list_webhook_endpoints',
    title: 'List webhook endpoints',
    description: 'Active endpoints, enabled or not, newest first.',
    input: Type.Object(PageInput),
    output: PageOf(Endpoint),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/endpoints' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `endpoints:${auth.orgId}`
      return toolPage(ctx, scope, args, page => listEndpoints(ctx.sql, auth.orgId, page), presentEndpoint)
    },
  }),
  tool({
    name: 'get_webhook_endpoint',
    title: 'Get a webhook endpoint',
    description: 'One active endpoint by id.',
    input: Type.Object(EndpointId),
    output: Endpoint,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/endpoints/:id' },
    handle: async ({ ctx, auth }, args) => presentEndpoint(await getEndpoint(ctx.sql, auth.orgId, args.endpoint_id)),
  }),
  tool({
    name: 'update_webhook_endpoint',
    title: 'Update a webhook endpoint',
    description: 'Changes any of url, enabled, domain_id and rules (rules replace the whole object).',
    input: Type.Object({ ...EndpointId, ...UpdateEndpoint.properties }),
    output: Endpoint,
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'PATCH', path: '/v1/endpoints/:id' },
    handle: async ({ ctx, auth }, { endpoint_id, ...patch }) => presentEndpoint(await updateEndpoint(ctx.sql, ctx, auth.orgId, endpoint_id, patch)),
  }),
  tool({
    name: 'delete_webhook_endpoint',
    title: 'Delete a webhook endpoint',
    description: 'Deactivates the endpoint for good: it stops receiving mail and frees its slot. Its past deliveries stay readable.',
    input: Type.Object(EndpointId),
    output: DeactivatedEndpoint,
    annotations: { ...WRITE, destructiveHint: true, idempotentHint: false },
    rest: { method: 'DELETE', path: '/v1/endpoints/:id' },
    handle: async ({ ctx, auth }, args) => {
      const row = await deactivateEndpoint(ctx.sql, auth.orgId, args.endpoint_id)
      return { ...presentEndpoint(row), deactivated_at: iso(row.deactivated_at)! }
    },
  }),
  tool({
    name: 'list_webhook_deliveries',
    title: 'List webhook deliveries',
    description:
      'Deliveries of events to your endpoints, newest first, with their status, attempts and the last HTTP status or error. Filter by email, status or time.',
    input: Type.Object({
      ...PageInput,
      email_id: Type.Optional(Type.String({ format: 'uuid', description: 'only deliveries of this email' })),
      status: Type.Optional(OneOf(STATUSES)),
      date_from: Instant('deliveries created at or after it'),
      date_to: Instant('deliveries created at or before it'),
    }),
    output: PageOf(Delivery),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/webhooks/deliveries' },
    handle: async ({ ctx, auth }, args) => {
      const filters = deliveryFilters(args)
      return toolPage(ctx, 'deliveries', args, page => listDeliveries(ctx.sql, auth.orgId, page, filters), presentDelivery)
    },
  }),
  tool({
    name: 'get_webhook_delivery',
    title: 'Get a webhook delivery',
    description: 'One delivery by id.',
    input: Type.Object(DeliveryId),
    output: Delivery,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/webhooks/deliveries/:id' },
    handle: async ({ ctx, auth }, args) => presentDelivery(await getDelivery(ctx.sql, auth.orgId, args.delivery_id)),
  }),
  tool({
    name: 'replay_webhook_delivery',
    title: 'Replay a webhook delivery',
    description:
      'Sends the stored event again, with its original event id (receivers deduplicate on it), to its original endpoint, now; also when the endpoint is disabled. ' +
      `conflict when the endpoint was deleted; at most ${REPLAYS_PER_MINUTE} replays per minute per organization (rate_limited).`,
    input: Type.Object(DeliveryId),
    output: Type.Object({
      delivered: Type.Integer({ description: '1 when the endpoint accepted it' }),
      failed: Type.Integer({ description: '1 when it did not' }),
    }),
    annotations: { ...WRITE, openWorldHint: true },
    rest: { method: 'POST', path: '/v1/webhooks/deliveries/:id/replay' },
    handle: async ({ ctx, auth }, args) => replayDelivery(ctx, auth.orgId, args.delivery_id),
  }),
]
