/**
 * Contacts' counters follow real mail: the store of every email (src/mail/store.ts) adds this
 * update to its one statement (a store extension, plugged in by src/plugins.ts), so the counters move in the transaction that stores the mail and
 * cost no extra round trip. An inbound copy counts for the contacts of its envelope recipients
 * whose address is the sender (From); an outbound one for the sender's contacts among its
 * recipients. Only existing contacts are counted: mail creates no contact.
 */
import type { Tx } from '../db/client'
import type { MessageActivity } from '../mail/store'
import { contactCountsUpdate } from './queries'

/** The owning and the other addresses of a message, lowercase. */
export function correspondents(m: MessageActivity): { owners: string[]; others: string[] } {
  const from = m.from ? [m.from.toLowerCase()] : []
  const rcpt = [...new Set(m.rcptTo.map(r => r.toLowerCase()))]
  return m.direction === 'inbound' ? { owners: rcpt, others: from } : { owners: from, others: rcpt }
}

/** A `contact_counts as (update ...)` common table expression for the store's statement. */
export function contactCountsCte(tx: Tx, m: MessageActivity) {
  const { owners, others } = correspondents(m)
  return contactCountsUpdate(tx, { orgId: m.orgId, owners, others, inbound: m.direction === 'inbound', at: m.at })
}
