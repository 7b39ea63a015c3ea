/**
 * Contacts' counters follow real mail: the store of every email (src/mail/store.ts) adds this
 * update to its one statement (a store extension, plugged in by src/plugins.ts), so the counters move in the transaction that stores the mail and
 * cost no extra round trip. An inbound copy counts for the contacts of its envelope recipients
 * whose address is the sender (From); an outbound one for the sender's contacts among its
 * recipients. Only existing contacts are counted: mail creates no contact.
 */
import type { Tx } from '../db/client'
import type { MessageActivity } from '../mail/store'

/** The owning and the other addresses of a message, lowercase. */
export function correspondents(m: MessageActivity): { owners: string[]; others: string[] } {
  const from = m.from ? [m.from.toLowerCase()] : []
  const rcpt = [...new Set(m.rcptTo.map(r => r.toLowerCase()))]
  return m.direction === 'inbound' ? { owners: rcpt, others: from } : { owners: from, others: rcpt }
}

/** A `contact_counts as (update ...)` common table expression for the store's statement. */
export function contactCountsCte(tx: Tx, m: MessageActivity) {
  const { owners, others } = correspondents(m)
  const inbound = m.direction === 'inbound'
  return tx`contact_counts as (
    update contacts set
      messages_received = messages_received + ${inbound ? 1 : 0},
      messages_sent = messages_sent + ${inbound ? 0 : 1},
      first_seen_at = least(coalesce(first_seen_at, ${m.at}), ${m.at}),
      last_contacted_at = greatest(coalesce(last_contacted_at, ${m.at}), ${m.at})
     where org_id = ${m.orgId} and owner_address = any(${owners}) and address = any(${others}))`
}

/**
 * The counters of a new contact from the mail already stored: one scan of the organization's
 * mail between the two addresses, when the contact is created.
 */
export const storedMailCounts = (tx: Tx, orgId: string, owner: string, address: string) => tx`
  select count(*) filter (where direction = 'inbound')::bigint as received,
         count(*) filter (where direction = 'outbound')::bigint as sent,
         min(received_at) as first_seen_at, max(received_at) as last_contacted_at
    from emails
   where org_id = ${orgId} and (
         (direction = 'inbound' and lower(from_address) = ${address} and exists (select 1 from unnest(rcpt_to) r where lower(r) = ${owner}))
      or (direction = 'outbound' and lower(from_address) = ${owner} and exists (select 1 from unnest(rcpt_to) r where lower(r) = ${address})))`
