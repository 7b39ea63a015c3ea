/**
 * `interaction.x402.settled` and `interaction.x402.rejected`: delivered like the organization's
 * other events that are not mail (src/webhooks/org-events.ts: to the payee's HTTP endpoints whose
 * `rules.event_types` list them), in the transaction that records the interaction's outcome.
 */
import type { AppContext } from '../../context'
import type { Tx } from '../../db/client'
import { recordChanges } from '../../changes/record'
import { enqueueOrgEvent } from '../../webhooks/org-events'

export async function enqueueInteractionEvent(
  tx: Tx,
  ctx: AppContext,
  orgId: string,
  type: 'interaction.x402.settled' | 'interaction.x402.rejected',
  data: Record<string, unknown>,
): Promise<void> {
  await recordChanges(tx, await enqueueOrgEvent(tx, ctx, orgId, type, data))
}
