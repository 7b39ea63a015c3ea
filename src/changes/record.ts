/**
 * Writing changes. Every write that the feed reports calls `recordChanges` in its own
 * transaction, as its last statement: the change commits with its cause or not at all.
 *
 * Numbering: one counter row per organization (`change_counters`), bumped by the same
 * statement that inserts the changes. Its row lock is held to the commit, so an
 * organization's change-writing transactions commit in seq order; a reader that has seen seq
 * N can never later miss a commit of a lower number (no gaps, see docs/agent-state.md).
 * Its NOTIFY names the organization and the addresses the changes are about (as `mailSignal`
 * does), so that a stream confined to an address wakes only for changes about it.
 * Taking it last keeps the lock short and the lock order the same everywhere (anything else a
 * transaction locks comes first), so the counter adds no deadlocks.
 */
import { randomUUIDv7 } from 'bun'
import type { Tx } from '../db/client'
import { insertChanges, type NewChange } from './queries'

export interface ChangeInput {
  orgId: string
  type: string
  resource: { type: string; id: string }
  data: Record<string, unknown>
  /** the mailbox addresses it concerns (lowercase); connection keys see only their own */
  addresses?: string[]
  /** evt_<32 hex>; given for mail events, whose id is their webhook event's id */
  id?: string
}

/** An event id: `evt_` and the 32 hex digits of a UUIDv7. */
export const eventId = (uuid: string = randomUUIDv7()) => `evt_${uuid.replaceAll('-', '')}`

/** Inserts the changes in order; returns the seq of each. Call it last in the transaction. */
export async function recordChanges(tx: Tx, changes: ChangeInput[]): Promise<number[]> {
  if (!changes.length) return []
  const rows = changes.map(
    (c, ord): NewChange => ({
      ord,
      org_id: c.orgId,
      id: c.id ?? eventId(),
      type: c.type,
      resource_type: c.resource.type,
      resource_id: c.resource.id,
      addresses: (c.addresses ?? []).map(a => a.toLowerCase()),
      data: c.data,
    }),
  )
  const result = await insertChanges(tx, rows)
  return result.map(r => Number(r.seq))
}
