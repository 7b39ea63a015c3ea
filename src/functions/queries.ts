/**
 * The functions table (functions/ owns it): its row type and every statement on it. Notes, wake
 * and memories (through the `memoryFunctions` seam, since functions stand above memories) call
 * `functionOfRuntimeKey`, `functionExists` and `liveFunctionId`.
 */
import type { Sql, Tx } from '../db/client'
import { domainsAs } from '../domains/queries'
import { listPage, type PageRequest } from '../http/pagination'
import type { MemoryFunctions } from '../memories/service'
import { liveEndpoints, routePatterns } from '../webhooks/queries'

/** A function with its live endpoint (the `endpoint_*` columns are null when it has none). */
export interface FunctionRow {
  id: string
  org_id: string
  name: string
  tags: string[]
  current_deployment_id: string | null
  runtime_key_id: string
  created_at: Date
  updated_at: Date
  endpoint_id: string | null
  endpoint_domain_id: string | null
  endpoint_enabled: boolean | null
  endpoint_route_target: boolean | null
}

const functionColumns = (sql: Tx) => sql`
  f.id, f.org_id, f.name, f.tags, f.current_deployment_id, f.runtime_key_id, f.created_at, f.updated_at,
  e.id as endpoint_id, e.domain_id as endpoint_domain_id, e.enabled as endpoint_enabled, e.is_route_target as endpoint_route_target`
const withEndpoint = (sql: Tx) => sql`left join ${liveEndpoints(sql)} e on e.org_id = f.org_id and e.function_id = f.id`

/** The organization's live function `id` with its endpoint; none when deleted or another organization's. */
export async function liveFunctionById(sql: Tx, orgId: string, id: string): Promise<FunctionRow | undefined> {
  const [row] = await sql<FunctionRow[]>`
    select ${functionColumns(sql)} from functions f ${withEndpoint(sql)}
     where f.id = ${id} and f.org_id = ${orgId} and f.deleted_at is null`
  return row
}

/** A page of the organization's live functions, newest first. */
export function functionsPage(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<FunctionRow>(sql, {
    columns: functionColumns(sql),
    from: sql`functions f`,
    join: withEndpoint(sql),
    where: sql`f.org_id = ${orgId} and f.deleted_at is null`,
    page,
    idColumn: 'f.id',
  })
}

/** Live functions by id, in any order, for readers that batch (GraphQL). */
export async function functionsByIds(sql: Sql, orgId: string, ids: readonly string[]): Promise<FunctionRow[]> {
  return sql<FunctionRow[]>`
    select ${functionColumns(sql)} from functions f ${withEndpoint(sql)}
     where f.id = any(${ids}::uuid[]) and f.org_id = ${orgId} and f.deleted_at is null`
}

/** A new function with its runtime key (the key's id, and the key sealed for invocations). */
export async function insertFunction(tx: Tx, f: { id: string; orgId: string; name: string; runtimeKeyId: string; runtimeKeySealed: Buffer }): Promise<void> {
  await tx`
    insert into functions (id, org_id, name, runtime_key_id, runtime_key_sealed)
    values (${f.id}, ${f.orgId}, ${f.name}, ${f.runtimeKeyId}, ${f.runtimeKeySealed})`
}

/** Takes the organization's live function `id` for update; whether there is one. Concurrent redeploys of one function become current in commit order. */
export async function lockLiveFunction(tx: Tx, orgId: string, id: string): Promise<boolean> {
  const [live] = await tx`select id from functions where id = ${id} and org_id = ${orgId} and deleted_at is null for update`
  return live !== undefined
}

/** Marks a function updated by a deployment, and makes the deployment current when `currentDeploymentId` is given (its check passed). */
export async function touchFunctionDeployed(tx: Tx, id: string, currentDeploymentId: string | null): Promise<void> {
  if (currentDeploymentId) await tx`update functions set current_deployment_id = ${currentDeploymentId}, updated_at = now() where id = ${id}`
  else await tx`update functions set updated_at = now() where id = ${id}`
}

/** Replaces a live function's tags; whether the organization has it. */
export async function updateFunctionTags(sql: Sql, orgId: string, id: string, tags: string[]): Promise<boolean> {
  const [row] = await sql`update functions set tags = ${tags}, updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null returning id`
  return row !== undefined
}

/** Marks a live function deleted; its id and runtime key's id, none when the organization has no such live function. */
export async function markFunctionDeleted(tx: Tx, orgId: string, id: string): Promise<{ id: string; runtime_key_id: string } | undefined> {
  const [fn] = await tx<{ id: string; runtime_key_id: string }[]>`
    update functions set deleted_at = now(), updated_at = now()
     where id = ${id} and org_id = ${orgId} and deleted_at is null returning id, runtime_key_id`
  return fn
}

/** What the routing topology shows of each live function: its endpoint's slot, its domain and the recipient routes to it. */
export interface FunctionRouteRow {
  function_id: string
  name: string
  endpoint_id: string | null
  enabled: boolean | null
  domain_id: string | null
  domain: string | null
  route_target: boolean | null
  recipient_routes: string[]
}

/** The organization's live functions by name, each with where its mail comes from. */
export async function functionRoutes(sql: Sql, orgId: string): Promise<FunctionRouteRow[]> {
  return sql<FunctionRouteRow[]>`
    select f.id as function_id, f.name, e.id as endpoint_id, e.enabled, e.domain_id, d.name as domain, e.is_route_target as route_target,
           ${routePatterns(sql, sql`e.id`)} as recipient_routes
      from functions f
      left join ${liveEndpoints(sql)} e on e.org_id = f.org_id and e.function_id = f.id
      left join ${domainsAs(sql, 'd')} on d.id = e.domain_id
     where f.org_id = ${orgId} and f.deleted_at is null
     order by f.name`
}

/** The function whose runtime key (SERVICE_API_KEY) is `keyId`, deleted or not; none for any other key. */
export async function functionOfRuntimeKey(sql: Tx, orgId: string, keyId: string): Promise<{ id: string; deleted: boolean } | undefined> {
  const [fn] = await sql<{ id: string; deleted: boolean }[]>`
    select id, deleted_at is not null as deleted from functions where org_id = ${orgId} and runtime_key_id = ${keyId}`
  return fn
}

/** Whether the organization has the function `id`; a deleted one counts. */
export async function functionExists(sql: Tx, orgId: string, id: string): Promise<boolean> {
  return (await sql`select 1 from functions where org_id = ${orgId} and id = ${id}`).length > 0
}

/** The id of the organization's function `id` unless it is deleted. */
export async function liveFunctionId(sql: Tx, orgId: string, id: string): Promise<string | undefined> {
  const [fn] = await sql<{ id: string }[]>`select id from functions where org_id = ${orgId} and id = ${id} and deleted_at is null`
  return fn?.id
}

/** What memories ask of the functions (the `memoryFunctions` seam, plugged in by src/plugins.ts). */
export const memoryFunctions: MemoryFunctions = { ofRuntimeKey: functionOfRuntimeKey, liveId: liveFunctionId }
