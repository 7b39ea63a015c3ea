/**
 * `interaction.x402.settled` and `interaction.x402.rejected`: delivered like payment events (to
 * the payee's HTTP endpoints whose `rules.event_types` list them), in the transaction that
 * records the interaction's outcome.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../../context'
import type { Tx } from '../../db/client'
import { enqueueWith } from '../../jobs/queue'
import { DELIVER_KIND, deliverAttempts } from '../../webhooks/deliver.job'
import { eventEndpoints, insertEventDelivery } from '../../webhooks/queries'
import { recordChanges, type ChangeInput } from '../../changes/record'
import { deliveryCreated } from '../../changes/sources'

export async function enqueueInteractionEvent(
  tx: Tx,
  ctx: AppContext,
  orgId: string,
  type: 'interaction.x402.settled' | 'interaction.x402.rejected',
  data: Record<string, unknown>,
): Promise<void> {
  const endpoints = await eventEndpoints(tx, tx`select ${orgId}::uuid`, [type])
  const created: ChangeInput[] = []
  for (const endpoint of endpoints) {
    const id = randomUUIDv7()
    const eventId = `evt_${id.replaceAll('-', '')}`
    const payload = { event: type, type, id: eventId, created_at: new Date().toISOString(), ...data }
    const delivery = insertEventDelivery(tx, { id, orgId, endpoint, eventId, eventType: type, payload })
    await enqueueWith(tx, delivery, DELIVER_KIND, { delivery_id: id }, { maxAttempts: deliverAttempts(ctx.config) })
    created.push(deliveryCreated({ id, orgId, endpointId: endpoint.id, eventId, eventType: type, emailId: null, status: 'pending' }))
  }
  await recordChanges(tx, created)
}
