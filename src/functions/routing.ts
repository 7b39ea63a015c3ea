/** Where a function receives mail: its one `kind: function` endpoint, and the topology read. */
import type { AppContext } from '../context'
import type { Sql } from '../db/client'
import { errors } from '../errors'
import { createEndpoint, updateEndpoint } from '../webhooks/endpoints.service'
import { functionEndpoint } from '../webhooks/endpoint-queries'
import { functionRoutes } from './queries'
import { getFunction, presentFunction } from './service'

/**
 * PUT /functions/{id}/route: the function's endpoint, created or moved to the slot (a domain's
 * default, or the fallback with empty rules), through the endpoints' own rules (plan limits,
 * entitlement, slot conflicts).
 */
export async function routeFunction(ctx: AppContext, orgId: string, functionId: string, domainId: string | null) {
  await getFunction(ctx.sql, orgId, functionId)
  const existing = await functionEndpoint(ctx.sql, orgId, functionId)
  if (!existing) {
    await createEndpoint(ctx.sql, ctx, orgId, { kind: 'function', function_id: functionId, domain_id: domainId, rules: {} })
  } else {
    if (existing.is_route_target) {
      throw errors.conflict(`function: it is reached through recipient routes (endpoint ${existing.id} is a route target); delete those routes first`, {
        conflicting_endpoint_id: existing.id,
      })
    }
    await updateEndpoint(ctx.sql, ctx, orgId, existing.id, { domain_id: domainId, enabled: true, ...(domainId === null ? { rules: {} } : {}) })
  }
  return presentFunction(await getFunction(ctx.sql, orgId, functionId))
}

/** Each live function with where its mail comes from: its endpoint's slot, its domain, the recipient routes to it. */
export async function routingTopology(sql: Sql, orgId: string) {
  const rows = await functionRoutes(sql, orgId)
  return {
    functions: rows.map(r => ({
      function_id: r.function_id,
      name: r.name,
      endpoint_id: r.endpoint_id,
      enabled: r.enabled ?? false,
      slot: !r.endpoint_id ? 'none' : r.route_target ? 'route_target' : r.domain_id ? 'domain' : 'fallback',
      domain_id: r.domain_id,
      domain: r.domain,
      recipient_routes: r.recipient_routes,
    })),
  }
}
