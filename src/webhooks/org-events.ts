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
  const endpoints = await tx<{ id: string; url: string }[]>`
    select id, url from endpoints
     where org_id = ${orgId} and kind = 'http' and enabled and deactivated_at is null and rules->'event_types' ? ${type}`
  const payload = { event: type, type, id: eventId, created_at: new Date().toISOString(), ...data }
  return Promise.all(
    endpoints.map(async endpoint => {
      const id = randomUUIDv7()
      const delivery = tx`
        insert into webhook_deliveries (id, org_id, email_id, endpoint_id, endpoint_url, event_id, event_type, status, payload)
        values (${id}, ${orgId}, null, ${endpoint.id}, ${endpoint.url}, ${eventId}, ${type}, 'pending', ${tx.json(payload as never)})`
      await enqueueWith(tx, delivery, DELIVER_KIND, { delivery_id: id }, { maxAttempts: deliverAttempts(ctx.config) })
      return deliveryCreated({ id, orgId, endpointId: endpoint.id, eventId, eventType: type, emailId: null, status: 'pending' })
    }),
  )
}
