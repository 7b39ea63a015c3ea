/** Recipient routes: create, list, read, delete. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { createRoute, deleteRoute, getRoute, listRoutes, presentRoute } from './recipient-routes.service'
import { PATTERN, Route } from './recipient-routes.model'
import { IdParams, Deleted } from '../http/schema'

export function recipientRouteRoutes(ctx: AppContext) {
  const managed = ctx.config.MANAGED_DOMAIN
  return new Elysia({ prefix: '/v1/routes', tags: ['Routes'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        const row = await createRoute(ctx.sql, managed, auth.orgId, body)
        set.status = 201
        return presentRoute(row)
      },
      {
        body: t.Object({
          pattern: t.String({ minLength: 1, maxLength: 500, description: PATTERN }),
          endpoint_id: t.Optional(t.String({ format: 'uuid', description: 'an active endpoint with is_route_target true' })),
          function_id: t.Optional(
            t.String({ format: 'uuid', description: "a function: the route goes to the function's route-target endpoint, created when it has none" }),
          ),
        }),
        response: { 201: Ok(Route) },
        detail: {
          summary: 'Create a route',
          description:
            'Exactly one of endpoint_id and function_id. An endpoint_id must be an active endpoint of the organization (404) with is_route_target true (400). ' +
            "A function_id uses the function's endpoint when it is a route target, creates one (kind function, is_route_target true, counted against webhooks_max_global) when the function has none, " +
            'and is 409 conflict when the function already has a default endpoint. ' +
            `Patterns whose domain is not exactly ${managed} need the routes_per_domain entitlement (403 feature_disabled). The same pattern twice is 409 conflict. ` +
            'Mail for a recipient goes to the most specific matching route (an exact address, then the longest pattern), else to the enabled default endpoint of its domain, else to the org-wide fallback.',
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `routes:${auth.orgId}`
        return cursors(ctx).read(scope, query, page => listRoutes(ctx.sql, auth.orgId, page), presentRoute)
      },
      {
        query: t.Object(pageQuery()),
        response: { 200: Paged(Route) },
        detail: { summary: 'List routes', description: 'Newest first.' },
      },
    )
    .get('/:id', async ({ auth, params }) => presentRoute(await getRoute(ctx.sql, auth.orgId, params.id)), {
      params: IdParams,
      response: { 200: Ok(Route) },
      detail: { summary: 'Get a route' },
    })
    .delete('/:id', async ({ auth, params }) => ({ ...(await deleteRoute(ctx.sql, auth.orgId, params.id)), deleted: true as const }), {
      params: IdParams,
      response: { 200: Ok(Deleted) },
      detail: { summary: 'Delete a route', description: 'The endpoint it pointed at stays; deactivate it with DELETE /v1/endpoints/{id} if no longer wanted.' },
    })
}
