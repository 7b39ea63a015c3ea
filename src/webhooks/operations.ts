/**
 * Webhook endpoints (where inbound mail is delivered) and the deliveries made to them, with
 * replay: declared once for REST, MCP and GraphQL (src/http/operation.ts).
 */
import { t } from 'elysia'
import { operation } from '../http/operation'
import { resourceOperations } from '../http/resource-operations'
import { IdParam, OneOf } from '../http/schema'
import { iso, Timestamp } from '../http/timestamps'
import { Delivery, STATUSES } from './deliveries.model'
import { deliveryFilters, getDelivery, listDeliveries, presentDelivery, replayDelivery, REPLAYS_PER_MINUTE } from './deliveries.service'
import { CreateEndpoint, DeactivatedEndpoint, Endpoint, UpdateEndpoint } from './endpoints.model'
import { createEndpoint, deactivateEndpoint, getEndpoint, listEndpoints, presentEndpoint, updateEndpoint } from './endpoints.service'

const ENDPOINTS = 'Webhook endpoints'
const DELIVERIES = 'Webhook deliveries'

const endpoint = resourceOperations('/v1/endpoints', { tag: ENDPOINTS, resource: 'endpoint', output: Endpoint, present: presentEndpoint, type: 'Endpoint' })
const delivery = resourceOperations('/v1/webhooks/deliveries', {
  tag: DELIVERIES,
  resource: 'delivery',
  output: Delivery,
  present: presentDelivery,
  type: 'Delivery',
})

const SLOT_RULE =
  'One enabled default endpoint per domain slot, and one org-wide fallback slot (domain_id null): a second one is 409 conflict with details.conflicting_endpoint_id. ' +
  'Route targets (is_route_target: true) are exempt. '
const GATES =
  'A domain_id needs the webhooks_per_domain entitlement (403 feature_disabled) and must be a domain of the organization (404). ' +
  'Plans with webhooks_max_global (free, agent: 1) cannot have more active endpoints than that, disabled ones and route targets included: ' +
  '403 feature_disabled with details.missing_entitlement webhooks_max_global. '

export const endpointOperations = [
  operation({
    name: 'create_webhook_endpoint',
    method: 'POST',
    path: '/v1/endpoints',
    tag: ENDPOINTS,
    summary: 'Create a webhook endpoint',
    description:
      'kind http (default) needs url and forbids function_id; kind function needs function_id and forbids url. ' +
      'The URL must be https on a publicly reachable host: private, loopback, link-local, CGNAT and metadata addresses are refused, also when a name resolves to one (400 validation_error on url). ' +
      SLOT_RULE +
      GATES +
      'A function has at most one endpoint: creating one again for the same function_id returns the existing endpoint unchanged with 200 instead of 201.',
    input: CreateEndpoint,
    output: Endpoint,
    status: 201,
    mayFindExisting: true,
    mcp: {
      description:
        'Delivers inbound mail as signed HTTP POSTs to an https URL on the public internet (or to a hosted function). ' +
        'One enabled default endpoint per domain slot and one org-wide fallback (domain_id null): a second is a conflict error.',
      hints: { openWorldHint: true },
    },
    async handle({ ctx, auth, status }, body) {
      const { row, created } = await createEndpoint(ctx.sql, ctx, auth.orgId, body)
      if (!created) status?.(200)
      return presentEndpoint(row)
    },
  }),
  endpoint.list({
    name: 'list_webhook_endpoints',
    summary: 'List webhook endpoints',
    description: 'Active (not deactivated) endpoints, enabled or not, newest first.',
    graphql: { field: 'endpoints', description: 'Active webhook endpoints, newest first (as GET /v1/endpoints).' },
    scope: ({ auth }) => `endpoints:${auth.orgId}`,
    fetch: listEndpoints,
  }),
  endpoint.get({
    name: 'get_webhook_endpoint',
    summary: 'Get a webhook endpoint',
    description: 'A deactivated endpoint is 404.',
    graphql: 'endpoint',
    find: getEndpoint,
  }),
  operation({
    name: 'update_webhook_endpoint',
    method: 'PATCH',
    path: '/v1/endpoints/:id',
    tag: ENDPOINTS,
    summary: 'Update a webhook endpoint',
    description:
      'Any of url, enabled, domain_id, rules (rules replace the whole object); at least one. url on a function endpoint is 400. ' +
      'Re-enabling an endpoint, or moving it into a slot another enabled endpoint holds, is 409 conflict. ' +
      'A new domain_id is checked like on create. A disabled endpoint receives no new mail but still receives replays of its earlier deliveries.',
    params: IdParam,
    resource: 'endpoint',
    input: UpdateEndpoint,
    // no body at all is reported like an empty one
    bodyOptional: true,
    output: Endpoint,
    handle: async ({ ctx, auth }, { id, ...patch }) => presentEndpoint(await updateEndpoint(ctx.sql, ctx, auth.orgId, id, patch)),
  }),
  operation({
    name: 'delete_webhook_endpoint',
    method: 'DELETE',
    path: '/v1/endpoints/:id',
    tag: ENDPOINTS,
    summary: 'Deactivate a webhook endpoint',
    description:
      'The endpoint stops receiving mail and frees its slot; the recipient routes pointing at it are deleted. Its deliveries stay readable, but cannot be replayed. ' +
      'It disappears from the list and reads, and no longer counts against webhooks_max_global. There is no way back: create a new endpoint.',
    params: IdParam,
    resource: 'endpoint',
    output: DeactivatedEndpoint,
    async handle({ ctx, auth }, { id }) {
      const row = await deactivateEndpoint(ctx.sql, auth.orgId, id)
      return { ...presentEndpoint(row), deactivated_at: iso(row.deactivated_at)! }
    },
  }),
]

export const deliveryOperations = [
  delivery.list({
    name: 'list_webhook_deliveries',
    summary: 'List webhook deliveries',
    description:
      'Deliveries of events to your endpoints, newest first, with their status, attempts and the last HTTP status or error. Filter by email, status or time; the filters combine.',
    input: t.Object({
      email_id: t.Optional(t.String({ format: 'uuid', description: 'only deliveries of this email' })),
      status: t.Optional(OneOf(STATUSES)),
      date_from: t.Optional(Timestamp('deliveries created at or after this instant')),
      date_to: t.Optional(Timestamp('deliveries created at or before this instant')),
    }),
    graphql: { field: 'deliveries', args: { status: 'DeliveryStatus', date_from: 'DateTime', date_to: 'DateTime' } },
    scope: () => 'deliveries',
    fetch: (sql, orgId, page, args) => listDeliveries(sql, orgId, page, deliveryFilters(args)),
  }),
  delivery.get({ name: 'get_webhook_delivery', summary: 'Get a webhook delivery', graphql: 'delivery', find: getDelivery }),
  operation({
    name: 'replay_webhook_delivery',
    method: 'POST',
    path: '/v1/webhooks/deliveries/:id/replay',
    tag: DELIVERIES,
    summary: 'Replay a webhook delivery',
    description:
      'Sends the stored event again, with its original event id (receivers deduplicate on it), to its original endpoint, now, in this request; also when the endpoint is disabled. ' +
      `409 conflict when the endpoint was deleted. At most ${REPLAYS_PER_MINUTE} replays per minute per organization (429 rate_limited).`,
    params: IdParam,
    resource: 'delivery',
    output: t.Object({
      delivered: t.Integer({ description: '1 when the endpoint accepted it' }),
      failed: t.Integer({ description: '1 when it did not' }),
    }),
    mcp: { hints: { openWorldHint: true } },
    handle: ({ ctx, auth }, { id }) => replayDelivery(ctx, auth.orgId, id),
  }),
]
