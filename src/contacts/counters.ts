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
