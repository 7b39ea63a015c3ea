/** Webhook endpoint tools (the Webhook endpoints routes): where inbound mail is delivered. */
import { Type } from '@sinclair/typebox'
import { cursors } from '../../http/pagination'
import { iso } from '../../http/timestamps'
import { CreateEndpoint, DeactivatedEndpoint, Endpoint, UpdateEndpoint } from '../../webhooks/endpoints.model'
import { createEndpoint, deactivateEndpoint, getEndpoint, listEndpoints, presentEndpoint, updateEndpoint } from '../../webhooks/endpoints.service'
import { PageInput, PageOf, pageResult, TOOL_PAGE } from '../schema'
import { READ, tool, WRITE } from '../tool'

const EndpointId = { endpoint_id: Type.String({ format: 'uuid' }) }

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
      const page = cursors(ctx).request(scope, args, TOOL_PAGE)
      const { rows, total } = await listEndpoints(ctx.sql, auth.orgId, page)
      return pageResult(cursors(ctx).page(scope, rows, page, total, presentEndpoint))
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
]
