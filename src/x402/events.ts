/**
 * `payment.settled` and `payment.failed` events. They go to the organization's active HTTP
 * endpoints whose `rules.event_types` list them (endpoints without `event_types` receive mail
 * events only, so a mail handler never sees a payment it does not expect), as webhook deliveries
 * signed like every other, each with its job, in the transaction that records the outcome. The
 * payee receives its copy with `direction: received`; a payer that is an organization of this
 * service receives its own with `direction: sent`.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import type { PendingQuery, Row } from 'postgres'
import { enqueueWith } from '../jobs/queue'
import { DELIVER_KIND, deliverAttempts } from '../webhooks/deliver.job'
import { eventEndpoints, insertEventDelivery, type EventEndpoint } from '../webhooks/queries'
import { recordChanges, type ChangeInput } from '../changes/record'
import { deliveryCreated, paymentChanges, type PaymentFacts } from '../changes/sources'
import { listedOrgs } from './settlement-queries'

export type PaymentEventType = 'payment.settled' | 'payment.failed'

/** A payment's outcome: the feed's payment facts narrowed to the two events a webhook carries. */
export type PaymentOutcome = PaymentFacts & { type: PaymentEventType }

function paymentEvent(eventId: string, o: PaymentOutcome, direction: 'received' | 'sent') {
  return {
    event: o.type,
    type: o.type,
    id: eventId,
    created_at: new Date().toISOString(),
    direction,
    challenge_id: o.challengeId,
    network: o.network,
    amount: o.amount,
    asset: o.asset,
    payer_org: o.payerOrg,
    payer: o.payer,
    pay_to: o.payTo,
    ...(o.type === 'payment.settled'
      ? { settle_tx: o.settleTx }
      : { failure_reason: o.failure!.reason, failure_category: o.failure!.category, reasons: o.failure!.reasons }),
  }
}

/** An endpoint that takes a payment event (src/webhooks/queries.ts). */
export type PaymentEndpoint = EventEndpoint

const PAYMENT_EVENT_TYPES: PaymentEventType[] = ['payment.settled', 'payment.failed']

/** The active HTTP endpoints, of the organizations listed or selected by a subquery, that take either payment event. */
export function paymentEndpoints(tx: Tx, orgIds: string[] | PendingQuery<Row[]>) {
  const orgs = Array.isArray(orgIds) ? listedOrgs(tx, orgIds) : orgIds
  return eventEndpoints(tx, orgs, PAYMENT_EVENT_TYPES)
}

/**
 * Creates the deliveries (and their jobs) of a payment outcome to `endpoints` (read with
 * `paymentEndpoints`) and its changes in the feed, in the caller's transaction. Every statement
 * is sent when this is called, the changes last (see changes/record.ts).
 */
export function writePaymentEvents(tx: Tx, ctx: AppContext, o: PaymentOutcome, endpoints: PaymentEndpoint[]): Promise<unknown> {
  const copies = endpoints
    .filter(endpoint => Array.isArray(endpoint.event_types) && endpoint.event_types.includes(o.type))
    .flatMap(endpoint => [
      ...(endpoint.org_id === o.payeeOrg ? [{ endpoint, direction: 'received' as const }] : []),
      ...(o.payerOrg && endpoint.org_id === o.payerOrg ? [{ endpoint, direction: 'sent' as const }] : []),
    ])
  const deliveries: ChangeInput[] = []
  const writes = copies.map(({ endpoint, direction }) => {
    const id = randomUUIDv7()
    const eventId = `evt_${id.replaceAll('-', '')}`
    const payload = paymentEvent(eventId, o, direction)
    const delivery = insertEventDelivery(tx, { id, orgId: endpoint.org_id, endpoint, eventId, eventType: o.type, payload })
    deliveries.push(deliveryCreated({ id, orgId: endpoint.org_id, endpointId: endpoint.id, eventId, eventType: o.type, emailId: null, status: 'pending' }))
    return enqueueWith(tx, delivery, DELIVER_KIND, { delivery_id: id }, { maxAttempts: deliverAttempts(ctx.config) })
  })
  return Promise.all([...writes, recordChanges(tx, [...paymentChanges(o), ...deliveries])])
}

/** Creates the deliveries (and their jobs) of a payment outcome and its changes in the feed, in the caller's transaction. */
export async function enqueuePaymentEvents(tx: Tx, ctx: AppContext, o: PaymentOutcome): Promise<void> {
  const endpoints = await paymentEndpoints(tx, o.payerOrg ? [o.payeeOrg, o.payerOrg] : [o.payeeOrg])
  await writePaymentEvents(tx, ctx, o, endpoints)
}
