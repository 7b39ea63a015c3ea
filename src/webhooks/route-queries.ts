/** The recipient_routes table: its row type and the statements of the routes' service. */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'

export interface RouteRow {
  id: string
  org_id: string
  pattern: string
  endpoint_id: string
  created_at: Date
}

/** The id of the organization's route for exactly `pattern`, or null. */
export async function routeWithPattern(sql: Tx, orgId: string, pattern: string): Promise<string | null> {
  const [row] = await sql<{ id: string }[]>`select id from recipient_routes where org_id = ${orgId} and pattern = ${pattern}`
  return row?.id ?? null
}

export async function insertRoute(tx: Tx, orgId: string, pattern: string, endpointId: string): Promise<RouteRow> {
  const [row] = await tx<RouteRow[]>`
    insert into recipient_routes (id, org_id, pattern, endpoint_id)
    values (${randomUUIDv7()}, ${orgId}, ${pattern}, ${endpointId})
    returning *`
  return row!
}

export function routesPage(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<RouteRow>(sql, { columns: sql`*`, from: sql`recipient_routes`, where: sql`org_id = ${orgId}`, page })
}

export async function routeById(sql: Sql, orgId: string, id: string): Promise<RouteRow | undefined> {
  const [row] = await sql<RouteRow[]>`select * from recipient_routes where id = ${id} and org_id = ${orgId}`
  return row
}

/** Deletes the route; its id, when it existed. */
export async function deleteRouteById(sql: Sql, orgId: string, id: string): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }[]>`delete from recipient_routes where id = ${id} and org_id = ${orgId} returning id`
  return row
}

/** Deletes the routes to an endpoint (it is being deactivated). */
export async function deleteRoutesOfEndpoint(tx: Tx, orgId: string, endpointId: string): Promise<void> {
  await tx`delete from recipient_routes where endpoint_id = ${endpointId} and org_id = ${orgId}`
}
