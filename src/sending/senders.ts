/** Who an organization may send as: its managed inboxes and any address at its verified domains. */
import { verifiedDomainNames } from '../domains/queries'
import { inboxAddresses } from '../mail/inbox-queries'
import type { Tx } from '../db/client'
import { ApiError } from '../errors'
import { splitAddress } from '../mail/inbound/recipients'

export interface Senders {
  inboxes: string[]
  domains: string[]
}

export async function validSenders(sql: Tx, orgId: string): Promise<Senders> {
  const [inboxes, domains] = await Promise.all([inboxAddresses(sql, orgId), verifiedDomainNames(sql, orgId)])
  return { inboxes, domains }
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
