/**
 * Recipient routes: mail for a recipient address or pattern (the language of patterns.ts) goes
 * to one route-target endpoint.
 *
 * Which endpoint receives a message for a recipient, in order:
 *   1. an explicit route whose pattern matches the recipient, the most specific first
 *      (`matchingRoute`): an exact address, then the pattern with the most literal (non-`*`)
 *      characters, then the one with fewer `*`, then the oldest route. The matching route claims
 *      the recipient even while its endpoint is disabled: nothing is delivered then, rather than
 *      mail meant for one receiver leaking to a default endpoint that may be another system;
 *   2. the enabled default endpoint of the recipient's (verified) domain (domain_id = that
 *      domain, not a route target);
 *   3. the org-wide fallback endpoint (domain_id null, not a route target), only for recipients
 *      whose domain has no enabled default endpoint of its own. Managed addresses
 *      (MANAGED_DOMAIN) have no domain row, so the fallback is their default.
 * A route target is reached only through step 1.
 *
 * Routes for addresses outside MANAGED_DOMAIN need the routes_per_domain entitlement. A route
 * points at an endpoint_id (which must be a route target), or at a function_id, for which the
 * function's route-target endpoint is minted or reused.
 */
import type { Sql, Tx } from '../db/client'
import { transaction } from '../db/transaction'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { findEndpoint, functionRouteTarget } from './endpoints.service'
import { expandPattern, isExactAddress, matchesPattern, normalizePattern, patternDomain, patternProblem } from './patterns'
import { isUniqueViolation } from '../db/errors'
import { planAccess, requireEntitlement } from '../account/access'
import { lockOrgForWebhooks } from './endpoint-queries'
import { deleteRouteById, insertRoute, type RouteRow, routeById, routesPage, routeWithPattern } from './route-queries'

export function presentRoute(row: RouteRow) {
  return { id: row.id, pattern: row.pattern, endpoint_id: row.endpoint_id, created_at: iso(row.created_at)! }
}

export interface NewRoute {
  pattern: string
  endpoint_id?: string
  function_id?: string
}

const ROUTE_TARGET_ONLY = 'must be a route-target endpoint (is_route_target: true)'

const patternTaken = (pattern: string, routeId: string | null) =>
  errors.conflict(`pattern: a route for ${pattern} already exists${routeId ? ` (${routeId})` : ''}; delete it first`, { conflicting_route_id: routeId })

/** Creates a route to a route-target endpoint, or to a function (minting its route-target endpoint when it has none). */
export async function createRoute(sql: Tx, managedDomain: string, orgId: string, input: NewRoute): Promise<RouteRow> {
  if (input.endpoint_id !== undefined && input.function_id !== undefined) throw errors.validation('function_id', 'must not be set together with endpoint_id')
  if (input.endpoint_id === undefined && input.function_id === undefined) throw errors.validation('endpoint_id', 'is required (or function_id)')
  const pattern = normalizePattern(input.pattern)
  const problem = patternProblem(pattern)
  if (problem) throw errors.validation('pattern', problem)
  const access = await planAccess(sql, orgId)
  if (patternDomain(pattern) !== managedDomain.toLowerCase()) {
    requireEntitlement(
      access,
      'routes_per_domain',
      `pattern: routes for addresses outside ${managedDomain} are not included in the ${access.plan} plan (entitlement routes_per_domain); route addresses @${managedDomain}, or upgrade`,
    )
  }
  try {
    return await transaction(sql, async tx => {
      await lockOrgForWebhooks(tx, orgId)
      const existing = await routeWithPattern(tx, orgId, pattern)
      if (existing) throw patternTaken(pattern, existing)
      let endpointId: string
      if (input.endpoint_id !== undefined) {
        const endpoint = await findEndpoint(tx, orgId, input.endpoint_id)
        if (!endpoint) throw errors.notFound('endpoint')
        if (!endpoint.is_route_target) throw errors.validation('endpoint_id', ROUTE_TARGET_ONLY)
        endpointId = endpoint.id
      } else {
        endpointId = (await functionRouteTarget(tx, access, orgId, input.function_id!.toLowerCase())).id
      }
      return insertRoute(tx, orgId, pattern, endpointId)
    })
  } catch (error) {
    if (isUniqueViolation(error, 'recipient_routes_pattern_key')) throw patternTaken(pattern, await routeWithPattern(sql, orgId, pattern))
    throw error
  }
}

export async function listRoutes(sql: Sql, orgId: string, page: PageRequest) {
  return routesPage(sql, orgId, page)
}

export async function getRoute(sql: Sql, orgId: string, id: string): Promise<RouteRow> {
  const row = await routeById(sql, orgId, id)
  if (!row) throw errors.notFound('route')
  return row
}

/** Deletes the route; the endpoint it pointed at stays (delete it separately if no longer wanted). */
export async function deleteRoute(sql: Sql, orgId: string, id: string): Promise<{ id: string }> {
  const row = await deleteRouteById(sql, orgId, id)
  if (!row) throw errors.notFound('route')
  return row
}

const literalLength = (pattern: string) => expandPattern(pattern).replace(/\*/g, '').length
const starCount = (pattern: string) => (expandPattern(pattern).match(/\*/g) ?? []).length

function compareRanks(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return 0
}

/**
 * The most specific route for `address` (see the order at the top of this file), or null.
 * `routes` must be in creation order (ids ascending) for the oldest-first tie-break.
 */
export function matchingRoute<R extends { pattern: string }>(routes: R[], address: string): R | null {
  let best: R | null = null
  let bestRank: number[] = []
  for (const route of routes) {
    if (!matchesPattern(route.pattern, address)) continue
    const rank = [isExactAddress(route.pattern) ? 1 : 0, literalLength(route.pattern), -starCount(route.pattern)]
    // strictly better only: on a tie the earlier (older) route stays
    if (!best || compareRanks(rank, bestRank) > 0) {
      best = route
      bestRank = rank
    }
  }
  return best
}
