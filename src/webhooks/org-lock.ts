/**
 * Serializes the organization's endpoint and route writes for the rest of the transaction: the
 * plan limit is a count, and a count checked before an insert only holds while nobody else
 * inserts. An advisory lock, not `for update` on the org row, so inbound mail updating the
 * org's counters never waits for it.
 */
import type { Tx } from '../db/client'

export async function lockOrgForWebhooks(tx: Tx, orgId: string) {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`webhooks:${orgId}`}, 0))`
}
