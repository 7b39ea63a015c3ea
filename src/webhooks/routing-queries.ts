/**
 * The routing of received mail: an organization's active endpoints, recipient routes, enabled
 * sender filters and verified domains, read together by the statement that selection.ts uses.
 */
import type { Tx } from '../db/client'
import { domainsAs } from '../domains/queries'
import type { EndpointRow } from './endpoint-queries'
import type { FilterRow } from './filter-queries'

/** An active endpoint, as routing reads it. */
export type RoutingEndpoint = Pick<EndpointRow, 'id' | 'kind' | 'url' | 'function_id' | 'enabled' | 'domain_id' | 'is_route_target' | 'rules'>

/** An enabled sender filter, as routing reads it. */
export type RoutingFilter = Pick<FilterRow, 'id' | 'type' | 'pattern' | 'domain_id'>

export interface ActiveRoute {
  id: string
  pattern: string
  endpoint_id: string
  /** a route to a disabled endpoint still claims its recipients, and delivers nothing */
  endpoint_enabled: boolean
}

export interface RoutingRow {
  endpoints: RoutingEndpoint[] | null
  routes: ActiveRoute[] | null
  filters: RoutingFilter[] | null
  domains: { id: string; name: string }[] | null
}

/**
 * The organization's active endpoints, its routes (oldest first, each with whether its endpoint
 * is enabled), its enabled sender filters (oldest first) and its verified domains, in one statement;
 * without an active endpoint only the endpoints are looked up.
 */
export async function routingRow(tx: Tx, orgId: string): Promise<RoutingRow | undefined> {
  const [row] = await tx<RoutingRow[]>`
    with active as (
      select id, kind, url, function_id, enabled, domain_id, is_route_target, rules from endpoints
       where org_id = ${orgId} and deactivated_at is null)
    select (select json_agg(e) from active e) as endpoints,
           (select json_agg(r order by r.id) from (
              select r.id, r.pattern, r.endpoint_id, e.enabled as endpoint_enabled
                from recipient_routes r join active e on e.id = r.endpoint_id
               where r.org_id = ${orgId}) r) as routes,
           (select json_agg(f order by f.id) from (
              select id, type, pattern, domain_id from filters
               where exists (select from active) and org_id = ${orgId} and enabled) f) as filters,
           (select json_agg(d) from (
              select id, name from ${domainsAs(tx, 'd')}
               where exists (select from active) and org_id = ${orgId} and status = 'verified') d) as domains`
  return row
}
