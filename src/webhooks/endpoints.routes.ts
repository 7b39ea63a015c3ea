/** Webhook endpoints: create, list, read, update, deactivate. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { iso } from '../http/timestamps'
import { CreateEndpoint, DeactivatedEndpoint, Endpoint, UpdateEndpoint } from './endpoints.model'
import { IdParams } from '../http/schema'
import { createEndpoint, deactivateEndpoint, getEndpoint, listEndpoints, presentEndpoint, updateEndpoint } from './endpoints.service'

const SLOT_RULE =
  'One enabled default endpoint per domain slot, and one org-wide fallback slot (domain_id null): a second one is 409 conflict with details.conflicting_endpoint_id. ' +
  'Route targets (is_route_target: true) are exempt. '
const GATES =
  'A domain_id needs the webhooks_per_domain entitlement (403 feature_disabled) and must be a domain of the organization (404). ' +
  'Plans with webhooks_max_global (free, agent: 1) cannot have more active endpoints than that, disabled ones and route targets included: ' +
  '403 feature_disabled with details.missing_entitlement webhooks_max_global. '

export function endpointRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/endpoints', tags: ['Webhook endpoints'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        const { row, created } = await createEndpoint(ctx.sql, ctx, auth.orgId, body)
        set.status = created ? 201 : 200
        return presentEndpoint(row)
      },
      {
        body: CreateEndpoint,
        response: { 200: Ok(Endpoint), 201: Ok(Endpoint) },
        detail: {
          summary: 'Create an endpoint',
          description:
            'kind http (default) needs url and forbids function_id; kind function needs function_id and forbids url. ' +
            'The URL must be https on a publicly reachable host: private, loopback, link-local, CGNAT and metadata addresses are refused, also when a name resolves to one (400 validation_error on url). ' +
            SLOT_RULE +
            GATES +
            'A function has at most one endpoint: creating one again for the same function_id returns the existing endpoint unchanged with 200 instead of 201.',
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `endpoints:${auth.orgId}`
        return cursors(ctx).read(scope, query, page => listEndpoints(ctx.sql, auth.orgId, page), presentEndpoint)
      },
      {
        query: t.Object(pageQuery()),
        response: { 200: Paged(Endpoint) },
        detail: { summary: 'List endpoints', description: 'Active (not deactivated) endpoints, enabled or not, newest first.' },
      },
    )
    .get('/:id', async ({ auth, params }) => presentEndpoint(await getEndpoint(ctx.sql, auth.orgId, params.id)), {
      params: IdParams,
      response: { 200: Ok(Endpoint) },
      detail: { summary: 'Get an endpoint', description: 'A deactivated endpoint is 404.' },
    })
    .patch('/:id', async ({ auth, params, body }) => presentEndpoint(await updateEndpoint(ctx.sql, ctx, auth.orgId, params.id, body ?? {})), {
      params: IdParams,
      // no body at all is reported like an empty one
      body: t.Optional(UpdateEndpoint),
      response: { 200: Ok(Endpoint) },
      detail: {
        summary: 'Update an endpoint',
        description:
          'Any of url, enabled, domain_id, rules (rules replace the whole object); at least one. url on a function endpoint is 400. ' +
          'Re-enabling an endpoint, or moving it into a slot another enabled endpoint holds, is 409 conflict. ' +
          'A new domain_id is checked like on create. A disabled endpoint receives no new mail but still receives replays of its earlier deliveries.',
      },
    })
    .delete(
      '/:id',
      async ({ auth, params }) => {
        const row = await deactivateEndpoint(ctx.sql, auth.orgId, params.id)
        return { ...presentEndpoint(row), deactivated_at: iso(row.deactivated_at)! }
      },
      {
        params: IdParams,
        response: { 200: Ok(DeactivatedEndpoint) },
        detail: {
          summary: 'Deactivate an endpoint',
          description:
            'The endpoint stops receiving mail and frees its slot; the recipient routes pointing at it are deleted. Its deliveries stay readable, but cannot be replayed. ' +
            'It disappears from the list and reads, and no longer counts against webhooks_max_global. There is no way back: create a new endpoint.',
        },
      },
    )
}
