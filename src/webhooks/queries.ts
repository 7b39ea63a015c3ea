/**
 * The statements of the webhook tables (endpoints, webhook_deliveries, recipient_routes) that
 * other features call: functions (an endpoint of kind function, its routes and deliveries), wake
 * (a run's endpoint) and x402 (payment and interaction events). A caller that needs a join in one
 * round trip nests a fragment from here (`liveEndpoints`, `routePatterns`), so these tables are
 * named in src/webhooks/ alone.
 */
import type { PendingQuery, Row } from 'postgres'
import type { Tx } from '../db/client'
import { domainsAs } from '../domains/queries'
import { managedInboxesAs } from '../mail/inbox-queries'

/** The endpoints not deactivated, as a relation to join (`left join ${liveEndpoints(sql)} e on ...`). */
export const liveEndpoints = (sql: Tx) => sql`(select * from endpoints where deactivated_at is null)`

/** The recipient routes' patterns of the endpoint `endpointId` (a column of the caller's statement), sorted; `{}` when none. */
export const routePatterns = (sql: Tx, endpointId: PendingQuery<Row[]>) =>
  sql`coalesce((select array_agg(r.pattern order by r.pattern) from recipient_routes r where r.endpoint_id = ${endpointId}), '{}')`

/** Whether the organization has the endpoint, not deactivated. */
export async function liveEndpointExists(sql: Tx, orgId: string, id: string): Promise<boolean> {
  return (await sql`select 1 from endpoints where org_id = ${orgId} and id = ${id} and deactivated_at is null`).length > 0
}

/** What decides the address a function's test email goes to (src/functions/observe.ts). */
export interface FunctionAddressFacts {
  /** the endpoint's domain, when it serves one */
  domain: string | null
  /** its first exact recipient route */
  route: string | null
  /** a managed inbox no route claims, for the fallback */
  inbox: string | null
  /** a verified domain without an endpoint of its own, for the fallback */
  free_domain: string | null
  is_route_target: boolean
  enabled: boolean
}

/** The facts of the live endpoint of the function `functionId`; none when it has none. */
export async function functionAddressFacts(sql: Tx, orgId: string, functionId: string): Promise<FunctionAddressFacts | undefined> {
  const [row] = await sql<FunctionAddressFacts[]>`
    select d.name as domain, e.is_route_target, e.enabled,
           (select r.pattern from recipient_routes r where r.endpoint_id = e.id and r.pattern not like '%*%' order by r.id limit 1) as route,
           (select i.address from ${managedInboxesAs(sql, 'i')} where i.org_id = e.org_id
              and not exists (select from recipient_routes r where r.org_id = e.org_id and r.pattern = i.address) order by i.id limit 1) as inbox,
           (select v.name from ${domainsAs(sql, 'v')} where v.org_id = e.org_id and v.status = 'verified'
              and not exists (select from endpoints o where o.org_id = e.org_id and o.domain_id = v.id and o.enabled and o.deactivated_at is null and not o.is_route_target)
              order by v.id limit 1) as free_domain
      from endpoints e left join ${domainsAs(sql, 'd')} on d.id = e.domain_id
     where e.org_id = ${orgId} and e.function_id = ${functionId} and e.deactivated_at is null`
  return row
}

/** Deactivates the function's endpoints and drops their recipient routes (the function is being deleted). */
export async function deactivateFunctionEndpoints(tx: Tx, orgId: string, functionId: string): Promise<void> {
  const endpoints = await tx<{ id: string }[]>`
    update endpoints set deactivated_at = now(), updated_at = now()
     where org_id = ${orgId} and function_id = ${functionId} and deactivated_at is null returning id`
  if (endpoints.length) await tx`delete from recipient_routes where org_id = ${orgId} and endpoint_id = any(${endpoints.map(e => e.id)}::uuid[])`
}

/** A delivery of a received email, as a function's test-run trace shows it. */
export interface TracedDelivery {
  id: string
  status: string
  created_at: Date
  updated_at: Date
  last_error_code: string | null
  attempt_count: number
}

/** The deliveries of the email `emailId` to the endpoints of the function `functionId`, in order. */
export function functionDeliveriesOf(sql: Tx, emailId: string, functionId: string) {
  return sql<TracedDelivery[]>`
    select d.id, d.status, d.created_at, d.updated_at, d.last_error_code, d.attempt_count from webhook_deliveries d
      join endpoints e on e.id = d.endpoint_id
     where d.email_id = ${emailId} and e.function_id = ${functionId} order by d.id`
}

/** An active HTTP endpoint that takes one of the event types asked for. */
export interface EventEndpoint {
  id: string
  url: string
  org_id: string
  /** the endpoint's `rules.event_types` */
  event_types: string[]
}

/** The active HTTP endpoints, of the organizations `orgs` (a subquery), that take any of `eventTypes`. */
export function eventEndpoints(tx: Tx, orgs: PendingQuery<Row[]>, eventTypes: string[]) {
  return tx<EventEndpoint[]>`
    select id, url, org_id, rules->'event_types' as event_types from endpoints
     where org_id in (${orgs}) and kind = 'http' and enabled and deactivated_at is null
       and rules->'event_types' ?| ${eventTypes}::text[]`
}

/** The active HTTP endpoints of the organization that take any of `eventTypes`. */
export const orgEventEndpoints = (tx: Tx, orgId: string, eventTypes: string[]) => eventEndpoints(tx, tx`select ${orgId}::uuid`, eventTypes)

/** A pending delivery of an event that concerns no email (a payment, an interaction), to `endpoint`. */
export interface EventDelivery {
  id: string
  orgId: string
  endpoint: { id: string; url: string }
  eventId: string
  eventType: string
  payload: unknown
}

/** Inserts the delivery; the caller enqueues its job with it (`enqueueWith`). */
export function insertEventDelivery(tx: Tx, d: EventDelivery) {
  return tx`
    insert into webhook_deliveries (id, org_id, email_id, endpoint_id, endpoint_url, event_id, event_type, status, payload)
    values (${d.id}, ${d.orgId}, null, ${d.endpoint.id}, ${d.endpoint.url}, ${d.eventId}, ${d.eventType}, 'pending', ${tx.json(d.payload as never)})`
}
