/**
 * Events of an organization that are not about a received message (an email-native x402 step's
 * outcome, a draft's approval): delivered to the organization's active HTTP endpoints whose
 * `rules.event_types` list the type (an endpoint without `event_types` receives mail events
 * only, so a mail handler never sees an event it does not expect), as webhook deliveries signed
 * like every other, each with its job, in the transaction of the write that causes them. Every
 * endpoint's copy and the event's change in the feed share one event id.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { enqueueWith } from '../jobs/queue'
import { eventId as newEventId, type ChangeInput } from '../changes/record'
import { deliveryCreated } from '../changes/sources'
import { DELIVER_KIND, deliverAttempts } from './deliver.job'
import { insertEventDelivery, orgEventEndpoints } from './queries'

/**
 * Writes the deliveries (and their jobs) of the event `type` carrying `data`, in the caller's
 * transaction. Returns their `delivery.created` changes, for the caller to record with its own,
 * last (see changes/record.ts).
 */
export async function enqueueOrgEvent(
  tx: Tx,
  ctx: AppContext,
  orgId: string,
  type: string,
  data: Record<string, unknown>,
  eventId: string = newEventId(),
): Promise<ChangeInput[]> {
  const endpoints = await orgEventEndpoints(tx, orgId, [type])
  const payload = { event: type, type, id: eventId, created_at: new Date().toISOString(), ...data }
  return Promise.all(
    endpoints.map(async endpoint => {
      const id = randomUUIDv7()
      const delivery = insertEventDelivery(tx, { id, orgId, endpoint, eventId, eventType: type, payload })
      await enqueueWith(tx, delivery, DELIVER_KIND, { delivery_id: id }, { maxAttempts: deliverAttempts(ctx.config) })
      return deliveryCreated({ id, orgId, endpointId: endpoint.id, eventId, eventType: type, emailId: null, status: 'pending' })
    }),
  )
}
