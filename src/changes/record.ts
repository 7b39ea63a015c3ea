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
import { CHANGES_CHANNEL, MAX_SIGNAL_BYTES } from '../events'

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
  const rows = changes.map((c, ord) => ({
    ord,
    org_id: c.orgId,
    id: c.id ?? eventId(),
    type: c.type,
    resource_type: c.resource.type,
    resource_id: c.resource.id,
    addresses: (c.addresses ?? []).map(a => a.toLowerCase()),
    data: c.data,
  }))
  // Counter rows are locked in org id order, so two transactions writing changes of the same
  // organizations never wait on each other in a cycle.
  const result = await tx<{ ord: number; seq: string }[]>`
    with input as (
      select x.*, row_number() over (partition by x.org_id order by x.ord) as n, count(*) over (partition by x.org_id) as total
        from jsonb_to_recordset(${tx.json(rows as never)}::jsonb)
          as x(ord int, org_id uuid, id text, type text, resource_type text, resource_id text, addresses text[], data jsonb)),
    bumped as (
      insert into change_counters as c (org_id, last_seq)
      select org_id, count(*) from input group by org_id order by org_id
      on conflict (org_id) do update set last_seq = c.last_seq + excluded.last_seq
      returning org_id, last_seq),
    numbered as (
      select i.*, b.last_seq - i.total + i.n as seq from input i join bumped b using (org_id)),
    written as (
      insert into changes (org_id, seq, id, type, resource_type, resource_id, addresses, data)
      select org_id, seq, id, type, resource_type, resource_id, addresses, data from numbered),
    signals as (
      select org_id, concat_ws(' ', org_id::text, string_agg(distinct a, ' ')) as payload
        from input left join lateral unnest(addresses) a on true group by org_id)
    select ord, seq,
           (select count(pg_notify(${CHANGES_CHANNEL}, case when length(payload) > ${MAX_SIGNAL_BYTES} or payload ~ '[^!-~ ]' then org_id::text else payload end))
              from signals) as notified
      from numbered order by ord`
  return result.map(r => Number(r.seq))
}
