/** The endpoints table: its row type and the statements of the endpoint rules (slots, the plan limit, deactivation). */
import { randomUUIDv7 } from 'bun'
import type { Static } from 'elysia'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { Rules } from './endpoints.model'

/** The delivery rules of an endpoint, as stored (`rules`, jsonb) and as the API takes them. */
export type EndpointRules = Static<typeof Rules>

export interface EndpointRow {
  id: string
  org_id: string
  kind: 'http' | 'function'
  url: string | null
  function_id: string | null
  enabled: boolean
  domain_id: string | null
  is_route_target: boolean
  rules: EndpointRules
  created_at: Date
  updated_at: Date
  deactivated_at: Date | null
}

/**
 * Serializes the organization's endpoint and route writes for the rest of the transaction: the
 * plan limit is a count, and a count checked before an insert only holds while nobody else
 * inserts. An advisory lock, not `for update` on the org row, so inbound mail updating the
 * org's counters never waits for it.
 */
export async function lockOrgForWebhooks(tx: Tx, orgId: string) {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`webhooks:${orgId}`}, 0))`
}

/** One endpoint of the organization; deactivated ones only with `includeDeactivated`. */
export async function endpointById(sql: Tx, orgId: string, id: string, includeDeactivated = false): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow[]>`
    select * from endpoints
     where id = ${id} and org_id = ${orgId} ${includeDeactivated ? sql`` : sql`and deactivated_at is null`}`
  return row
}

/** A page of the organization's active endpoints. */
export function activeEndpointsPage(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<EndpointRow>(sql, {
    columns: sql`*`,
    from: sql`endpoints`,
    where: sql`org_id = ${orgId} and deactivated_at is null`,
    page,
  })
}

/** Active endpoints by id, in any order, for readers that batch (GraphQL). */
export async function endpointsByIds(sql: Sql, orgId: string, ids: readonly string[]): Promise<EndpointRow[]> {
  return sql<EndpointRow[]>`select * from endpoints where id = any(${ids}::uuid[]) and org_id = ${orgId} and deactivated_at is null`
}

/** The active endpoint of a function, if it has one (a function has at most one). */
export async function functionEndpoint(sql: Tx, orgId: string, functionId: string): Promise<EndpointRow | null> {
  const [row] = await sql<EndpointRow[]>`
    select * from endpoints where org_id = ${orgId} and function_id = ${functionId} and deactivated_at is null`
  return row ?? null
}

/** The enabled default endpoint holding a slot (domain_id null = the fallback slot), other than `except`. */
export async function slotOccupant(sql: Tx, orgId: string, domainId: string | null, except: string | null): Promise<string | null> {
  const [row] = await sql<{ id: string }[]>`
    select id from endpoints
     where org_id = ${orgId} and enabled and deactivated_at is null and not is_route_target
       and ${domainId === null ? sql`domain_id is null` : sql`domain_id = ${domainId}`}
       ${except ? sql`and id <> ${except}` : sql``}
     limit 1`
  return row?.id ?? null
}

/** How many active endpoints the organization has (disabled and route targets too). */
export async function countActiveEndpoints(tx: Tx, orgId: string): Promise<number> {
  const [row] = await tx<{ n: number }[]>`select count(*)::int as n from endpoints where org_id = ${orgId} and deactivated_at is null`
  return row!.n
}

export interface NewEndpointRow {
  kind: 'http' | 'function'
  url: string | null
  functionId: string | null
  enabled: boolean
  domainId: string | null
  isRouteTarget: boolean
  rules: EndpointRules
}

export async function insertEndpoint(tx: Tx, orgId: string, e: NewEndpointRow): Promise<EndpointRow> {
  const [row] = await tx<EndpointRow[]>`
    insert into endpoints (id, org_id, kind, url, function_id, enabled, domain_id, is_route_target, rules)
    values (${randomUUIDv7()}, ${orgId}, ${e.kind}, ${e.url}, ${e.functionId}, ${e.enabled}, ${e.domainId}, ${e.isRouteTarget}, ${tx.json(e.rules as never)})
    returning *`
  return row!
}

/** Sets the endpoint's url, enabled, domain_id and rules (whole). */
export async function updateEndpointFields(
  tx: Tx,
  orgId: string,
  id: string,
  f: { url: string | null; enabled: boolean; domainId: string | null; rules: EndpointRules },
): Promise<EndpointRow> {
  const [updated] = await tx<EndpointRow[]>`
    update endpoints
       set url = ${f.url}, enabled = ${f.enabled}, domain_id = ${f.domainId},
           rules = ${tx.json(f.rules as never)}, updated_at = now()
     where id = ${id} and org_id = ${orgId}
     returning *`
  return updated!
}

/** Deactivates the endpoint, if active; the row as it is now. */
export async function markEndpointDeactivated(tx: Tx, orgId: string, id: string): Promise<EndpointRow | undefined> {
  const [row] = await tx<EndpointRow[]>`
    update endpoints set deactivated_at = now(), updated_at = now()
     where id = ${id} and org_id = ${orgId} and deactivated_at is null
     returning *`
  return row
}

/** The kind and URL of the organization's active endpoint `id`, for a test send. */
export async function endpointTarget(sql: Sql, orgId: string, id: string): Promise<{ kind: string; url: string | null } | undefined> {
  const [row] = await sql<{ kind: string; url: string | null }[]>`
    select kind, url from endpoints where id = ${id} and org_id = ${orgId} and deactivated_at is null`
  return row
}
