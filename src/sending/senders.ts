/** Who an organization may send as: its managed inboxes and any address at its verified domains. */
import type { Tx } from '../db/client'
import { ApiError } from '../errors'
import { splitAddress } from '../mail/inbound/recipients'

export interface Senders {
  inboxes: string[]
  domains: string[]
}

export async function validSenders(sql: Tx, orgId: string): Promise<Senders> {
  const [inboxes, domains] = await Promise.all([
    sql<{ address: string }[]>`select address from managed_inboxes where org_id = ${orgId} order by address`,
    sql<{ name: string }[]>`select name from domains where org_id = ${orgId} and status = 'verified' order by name`,
  ])
  return { inboxes: inboxes.map(i => i.address), domains: domains.map(d => d.name) }
}

/** Throws 403 cannot_send_from_domain unless `from` is one of the organization's senders. */
export async function requireSender(sql: Tx, orgId: string, from: string): Promise<void> {
  const senders = await validSenders(sql, orgId)
  const address = from.toLowerCase()
  if (senders.inboxes.includes(address) || senders.domains.includes(splitAddress(address).domain)) return
  throw new ApiError('cannot_send_from_domain', `from: ${from} is not a verified sender of this organization`, {
    valid_senders: [...senders.domains, ...senders.inboxes],
    verified_domains: senders.domains,
    managed_inboxes: senders.inboxes,
  })
}
