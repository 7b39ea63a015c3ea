/**
 * Which endpoints a stored message goes to, decided in the transaction that stores it.
 *
 * The order in which a recipient's endpoint is chosen (routes, domain default, fallback) is
 * documented in recipient-routes.service.ts. Each endpoint gets one delivery per message, however
 * many recipients led to it. Sender filters (org-wide, plus those of the recipient domains) and
 * the endpoint's rules decide whether the delivery is sent or recorded as `skipped_by_rules`
 * with the reason.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { enqueueWith } from '../jobs/queue'
import type { StoredEmail } from '../mail/store'
import type { ParsedMail } from '../mail/inbound/parse'
import type { ReceivedMailConsumer } from '../mail/inbound/ingest'
import { splitAddress } from '../mail/inbound/recipients'
import { matchesPattern } from './patterns'
import { endpointUrl } from './endpoints.service'
import type { EndpointRules } from './endpoint-queries'
import { insertEmailDelivery } from './delivery-queries'
import { insertEventDelivery } from './queries'
import { matchingRoute } from './recipient-routes.service'
import { type ActiveRoute, type RoutingEndpoint, type RoutingFilter, routingRow } from './routing-queries'
import { emailEvent } from './payload'
import { DELIVER_KIND, deliverAttempts } from './deliver.job'
import { eventId, type ChangeInput } from '../changes/record'
import { deliveryCreated } from '../changes/sources'

interface Routing {
  endpoints: RoutingEndpoint[]
  routes: ActiveRoute[]
  filters: RoutingFilter[]
  domains: Map<string, string>
}

/** The routing of an organization (see `routingRow`), with its verified domains by name. */
async function loadRouting(tx: Tx, orgId: string): Promise<Routing> {
  const row = await routingRow(tx, orgId)
  return {
    endpoints: row?.endpoints ?? [],
    routes: row?.routes ?? [],
    filters: row?.filters ?? [],
    domains: new Map((row?.domains ?? []).map(d => [d.name, d.id])),
  }
}

/**
 * The routing read once per organization for a batch of messages stored in one transaction
 * (inbound group commit): the messages of a batch see the same endpoints, routes and filters.
 */
export function routingCache() {
  const cache = new Map<string, Promise<Routing>>()
  return (tx: Tx, orgId: string) => {
    let routing = cache.get(orgId)
    if (!routing) cache.set(orgId, (routing = loadRouting(tx, orgId)))
    return routing
  }
}

function endpointFor(r: Routing, recipient: string): RoutingEndpoint | undefined {
  const route = matchingRoute(r.routes, recipient)
  if (route) return r.endpoints.find(e => e.id === route.endpoint_id && e.enabled)
  const domainId = r.domains.get(splitAddress(recipient).domain)
  const defaults = r.endpoints.filter(e => e.enabled && !e.is_route_target)
  const own = domainId ? defaults.find(e => e.domain_id === domainId) : undefined
  return own ?? defaults.find(e => e.domain_id === null)
}

/** Why sender filters refuse this message, or null. */
function filterVerdict(r: Routing, sender: string, domainIds: Set<string | null>): string | null {
  const inScope = r.filters.filter(f => f.domain_id === null || domainIds.has(f.domain_id))
  const blocked = inScope.find(f => f.type === 'blocklist' && matchesPattern(f.pattern, sender))
  if (blocked) return `filter: sender ${sender} matches blocklist pattern ${blocked.pattern}`
  const whitelist = inScope.filter(f => f.type === 'whitelist')
  if (whitelist.length && !whitelist.some(f => matchesPattern(f.pattern, sender))) return `filter: sender ${sender} matches no whitelist pattern`
  return null
}

/** Why the endpoint's rules refuse this message, or null. Sizes are approximate, as documented. */
export function rulesVerdict(
  rules: EndpointRules,
  m: { eventType: string; sender: string; sizeBytes: number; attachmentBytes: number; attachmentCount: number },
): string | null {
  if (rules.event_types && !rules.event_types.includes(m.eventType)) return `rules.event_types: ${m.eventType} is not subscribed`
  if (rules.max_size_bytes !== undefined && m.sizeBytes > rules.max_size_bytes) return `rules.max_size_bytes: message is ${m.sizeBytes} bytes`
  if (rules.exclude_attachments && m.attachmentCount > 0) return 'rules.exclude_attachments: message has attachments'
  if (rules.attachment_limit_mb !== undefined && m.attachmentBytes > rules.attachment_limit_mb * 1024 * 1024)
    return `rules.attachment_limit_mb: attachments total ${m.attachmentBytes} bytes`
  if (rules.sender_whitelist && !rules.sender_whitelist.includes(m.sender)) return `rules.sender_whitelist: ${m.sender} is not listed`
  if (rules.sender_blacklist?.includes(m.sender)) return `rules.sender_blacklist: ${m.sender} is listed`
  return null
}

/**
 * Creates the deliveries of a stored message (and their jobs) in the storing transaction;
 * `routingOf` is the batch's routing cache; `eventFields` are added to the event (the send a
 * bounce is about). Returns their `delivery.created` changes, for the caller to record with the
 * message's own (the feed's counter is taken last).
 */
export async function enqueueDeliveries(
  tx: Tx,
  ctx: AppContext,
  email: StoredEmail,
  mail: ParsedMail,
  routingOf: ReturnType<typeof routingCache>,
  eventFields: Record<string, unknown> = {},
): Promise<ChangeInput[]> {
  const routing = await routingOf(tx, email.orgId)
  if (!routing.endpoints.length) return []
  const targets = new Map<string, RoutingEndpoint>()
  for (const rcpt of email.rcptTo) {
    const endpoint = endpointFor(routing, rcpt)
    if (endpoint) targets.set(endpoint.id, endpoint)
  }
  if (!targets.size) return []
  const sender = (mail.from?.address ?? email.mailFrom).toLowerCase()
  const domainIds = new Set(email.rcptTo.map(a => routing.domains.get(splitAddress(a).domain) ?? null))
  const filtered = filterVerdict(routing, sender, domainIds)
  const facts = {
    eventType: email.eventType,
    sender,
    sizeBytes: email.sizeBytes,
    attachmentBytes: mail.attachments.reduce((n, a) => n + a.size_bytes, 0),
    attachmentCount: mail.attachments.length,
  }
  // One event, one id: every endpoint's delivery of this email and its change in the feed share it.
  const event = eventId(email.id)
  const created: ChangeInput[] = []
  for (const endpoint of targets.values()) {
    const id = randomUUIDv7()
    const skipped = filtered ?? rulesVerdict(endpoint.rules, facts)
    const status = skipped ? 'skipped_by_rules' : 'pending'
    const delivery = insertEmailDelivery(tx, {
      id,
      orgId: email.orgId,
      emailId: email.id,
      endpointId: endpoint.id,
      endpointUrl: endpointUrl(endpoint),
      eventId: event,
      eventType: email.eventType,
      status,
      skipped,
      payload: { ...emailEvent(event, email, mail), ...eventFields },
    })
    // HTTP and function endpoints alike: the attempt invokes a function in a sandbox (src/functions/delivery.ts).
    if (!skipped) await enqueueWith(tx, delivery, DELIVER_KIND, { delivery_id: id }, { maxAttempts: deliverAttempts(ctx.config) })
    else await delivery
    created.push(
      deliveryCreated({
        id,
        orgId: email.orgId,
        endpointId: endpoint.id,
        eventId: event,
        eventType: email.eventType,
        emailId: email.id,
        status,
        reason: skipped,
      }),
    )
  }
  return created
}

/** Received mail's webhook deliveries: a consumer of the inbound store (src/plugins.ts), one routing cache per batch. */
export const webhookDeliveries: ReceivedMailConsumer = ctx => {
  const routing = routingCache()
  return (tx, email, mail, copy) => enqueueDeliveries(tx, ctx, email, mail, routing, copy.eventFields)
}

/**
 * An event about an address of the organization that came with no message of its own (a bounce
 * the relay answered at delivery, so no report mail will come): delivered to the endpoint mail
 * to `address` goes to, if it is an HTTP endpoint and its `rules.event_types` take it, with its job, in the caller's
 * transaction. `event` gets the event's id. Returns the `delivery.created` change, for the caller
 * to record.
 */
export async function enqueueAddressEvent(
  tx: Tx,
  ctx: AppContext,
  e: { orgId: string; address: string; eventType: string; event: (eventId: string) => Record<string, unknown> },
): Promise<ChangeInput[]> {
  const endpoint = endpointFor(await loadRouting(tx, e.orgId), e.address)
  // a function's run is about a stored email (its activity refers to it): such events go to HTTP endpoints only
  if (endpoint?.kind !== 'http') return []
  if (endpoint.rules.event_types && !endpoint.rules.event_types.includes(e.eventType)) return []
  const id = randomUUIDv7()
  const event = eventId(id)
  const delivery = insertEventDelivery(tx, {
    id,
    orgId: e.orgId,
    endpoint: { id: endpoint.id, url: endpointUrl(endpoint) },
    eventId: event,
    eventType: e.eventType,
    payload: e.event(event),
  })
  await enqueueWith(tx, delivery, DELIVER_KIND, { delivery_id: id }, { maxAttempts: deliverAttempts(ctx.config) })
  return [deliveryCreated({ id, orgId: e.orgId, endpointId: endpoint.id, eventId: event, eventType: e.eventType, emailId: null, status: 'pending' })]
}
