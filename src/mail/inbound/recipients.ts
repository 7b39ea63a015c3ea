/**
 * Which organization an envelope recipient belongs to: a managed inbox under the managed
 * domain, or any address at a domain an organization has verified. Anything else is not ours.
 */
import type { AppContext } from '../../context'
import { verifiedDomainOwner } from '../../domains/service'
import { managedInboxOwner } from '../../inboxes/service'
import { planDefinition, type Plan } from '../../account/plans'
import type { SmtpReply } from '../../smtp/types'

export interface Recipient {
  address: string
  orgId: string
}

export const replies = {
  unknownUser: { code: 550, enhanced: '5.1.1', message: 'no such mailbox here' },
  relayDenied: { code: 550, enhanced: '5.7.1', message: 'relaying denied: we do not host this domain' },
  mailboxFull: { code: 452, enhanced: '4.2.2', message: 'mailbox over its storage limit; try again later' },
} satisfies Record<string, SmtpReply>

export function splitAddress(address: string): { local: string; domain: string } {
  const at = address.lastIndexOf('@')
  return { local: address.slice(0, at), domain: address.slice(at + 1).toLowerCase().replace(/\.$/, '') }
}

export async function resolveRecipient(ctx: AppContext, address: string): Promise<Recipient | SmtpReply> {
  const { domain } = splitAddress(address)
  const normalized = address.toLowerCase()
  if (domain === ctx.config.MANAGED_DOMAIN) {
    const inbox = await managedInboxOwner(ctx.sql, normalized)
    return inbox ? { address: normalized, orgId: inbox.orgId } : replies.unknownUser
  }
  const owner = await verifiedDomainOwner(ctx.sql, domain)
  return owner ? { address: normalized, orgId: owner.orgId } : replies.relayDenied
}

/** Bytes an organization may still store before inbound mail is refused; null = no limit (paid plans). */
export async function storageHeadroom(ctx: AppContext, orgId: string): Promise<number | null> {
  const [org] = await ctx.sql<{ plan: Plan; used: number }[]>`select plan, storage_used_bytes as used from orgs where id = ${orgId}`
  const limitMb = org ? planDefinition(org.plan).limits.storage_limit_mb : null
  return limitMb === null || !org ? null : limitMb * 1024 * 1024 - Number(org.used)
}
