/**
 * Which organization an envelope recipient belongs to: a managed inbox under the managed
 * domain, or any address at a domain an organization has verified. Anything else is not ours.
 */
import type { AppContext } from '../../context'
import { planDefinition, type Plan } from '../../account/plans'
import { ownersOf } from './recipient-queries'
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
  return {
    local: address.slice(0, at),
    domain: address
      .slice(at + 1)
      .toLowerCase()
      .replace(/\.$/, ''),
  }
}

/** A recipient with its organization's storage headroom, read in the same query. */
export interface ResolvedRecipient extends Recipient {
  /** bytes the organization may store in all before inbound mail is refused; null = no limit (paid plans) */
  storageLimit: number | null
  /** what is left of `storageLimit` when it was read; null = no limit */
  headroom: number | null
}

/**
 * Resolves envelope recipients, each to its organization with that organization's storage
 * headroom, or to the reply that refuses it: one query for all of them, in their order.
 */
export async function resolveRecipients(ctx: AppContext, addresses: string[]): Promise<(ResolvedRecipient | SmtpReply)[]> {
  const wanted = addresses.map(address => {
    const { domain } = splitAddress(address)
    const normalized = address.toLowerCase()
    return domain === ctx.config.MANAGED_DOMAIN
      ? { normalized, kind: 'inbox' as const, key: normalized.trim() }
      : { normalized, kind: 'domain' as const, key: domain.trim().replace(/\.$/, '') }
  })
  const inboxes = wanted.filter(w => w.kind === 'inbox').map(w => w.key)
  const domains = wanted.filter(w => w.kind === 'domain').map(w => w.key)
  const rows = wanted.length ? await ownersOf(ctx.sql, inboxes, domains) : []
  const owners = new Map(rows.map(r => [`${r.kind}:${r.key}`, r]))
  return wanted.map(w => {
    const owner = owners.get(`${w.kind}:${w.key}`)
    if (!owner) return w.kind === 'inbox' ? replies.unknownUser : replies.relayDenied
    const limit = storageLimit(owner.plan)
    return { address: w.normalized, orgId: owner.org_id, storageLimit: limit, headroom: limit === null ? null : limit - Number(owner.used) }
  })
}

export async function resolveRecipient(ctx: AppContext, address: string): Promise<ResolvedRecipient | SmtpReply> {
  return (await resolveRecipients(ctx, [address]))[0]!
}

/** Bytes an organization may store before inbound mail is refused; null = no limit (paid plans). */
function storageLimit(plan: Plan | null): number | null {
  const limitMb = plan ? planDefinition(plan).limits.storage_limit_mb : null
  return limitMb === null ? null : limitMb * 1024 * 1024
}
