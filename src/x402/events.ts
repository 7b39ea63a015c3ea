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
import { enqueueWith } from '../jobs/queue'
import { DELIVER_KIND, deliverAttempts } from '../webhooks/deliver.job'
import { recordChanges, type ChangeInput } from '../changes/record'
import { deliveryCreated, paymentChanges } from '../changes/sources'

export type PaymentEventType = 'payment.settled' | 'payment.failed'

export interface PaymentOutcome {
  type: PaymentEventType
  challengeId: string
  network: string
  amount: string
  asset: string
  payeeOrg: string
  payerOrg: string | null
  payer: string | null
  payTo: string
  settleTx?: string
  failure?: { reason: string; category: string; reasons: string[] }
}

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

/** Creates the deliveries (and their jobs) of a payment outcome and its changes in the feed, in the caller's transaction. */
export async function enqueuePaymentEvents(tx: Tx, ctx: AppContext, o: PaymentOutcome): Promise<void> {
  const copies: [string, 'received' | 'sent'][] = [[o.payeeOrg, 'received']]
  if (o.payerOrg) copies.push([o.payerOrg, 'sent'])
  const deliveries: ChangeInput[] = []
  for (const [orgId, direction] of copies) {
    const endpoints = await tx<{ id: string; url: string }[]>`
      select id, url from endpoints
       where org_id = ${orgId} and kind = 'http' and enabled and deactivated_at is null
         and rules->'event_types' ? ${o.type}`
    for (const endpoint of endpoints) {
      const id = randomUUIDv7()
      const eventId = `evt_${id.replaceAll('-', '')}`
      const delivery = tx`
        insert into webhook_deliveries (id, org_id, email_id, endpoint_id, endpoint_url, event_id, event_type, status, payload)
        values (${id}, ${orgId}, null, ${endpoint.id}, ${endpoint.url}, ${eventId}, ${o.type}, 'pending',
                ${tx.json(paymentEvent(eventId, o, direction) as never)})`
      await enqueueWith(tx, delivery, DELIVER_KIND, { delivery_id: id }, { maxAttempts: deliverAttempts(ctx.config) })
      deliveries.push(deliveryCreated({ id, orgId, endpointId: endpoint.id, eventId, eventType: o.type, emailId: null, status: 'pending' }))
    }
  }
  // the changes feed's record of the outcome and its deliveries, last (see changes/record.ts)
  await recordChanges(tx, [...paymentChanges(o), ...deliveries])
}
