/** DKIM for outbound mail: which key signs a message, and the signature itself (mailauth). */
import { LRUCache } from 'lru-cache'
import { dkimSign as mailauthSign } from 'mailauth/lib/dkim/sign'
import type { DKIMSignOptions } from 'mailauth'
import { perProcess, type AppContext } from '../../context'
import { dkimKeyFor } from '../../domains/service'
import { managedDkimKey } from './managed-key'
import { RelayError } from './relay-types'

export interface SigningKey {
  domain: string
  selector: string
  privateKeyPem: string
}

/**
 * Signed even when absent from a message is not possible with mailauth (it lists only present
 * fields), so this is the set we make sure is covered whenever present: everything a reader
 * or a send gate relies on, To included (send_to_known_addresses checks that DKIM covers To).
 */
export const SIGNED_HEADERS = [
  'From', 'Sender', 'Reply-To', 'To', 'Cc', 'Subject', 'Date', 'Message-ID', 'In-Reply-To', 'References',
  'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding', 'List-Unsubscribe', 'List-Unsubscribe-Post',
]
const canonical = (domain: string) => domain.trim().toLowerCase().replace(/\.$/, '')

/**
 * Keys are fetched and decrypted once a minute at most per process and organization + domain
 * (the managed domain's key is the same for everyone). A key never changes in place: a domain
 * deleted and claimed again gets a new one, which takes a new DNS record and a verification
 * first, so a minute of the old one is harmless. "No key" is not cached, so a domain that was
 * just verified signs at once.
 */
const KEY_TTL_MS = 60_000
const keyCache = perProcess(
  ctx =>
    new LRUCache<string, SigningKey, { orgId: string | null; domain: string }>({
      max: 10_000,
      ttl: KEY_TTL_MS,
      // concurrent first uses share one fetch; undefined (no key) is not stored
      fetchMethod: async (_key, _stale, { context }) => (await loadKey(ctx, context.orgId, context.domain)) ?? undefined,
    }),
)

async function loadKey(ctx: AppContext, orgId: string | null, domain: string): Promise<SigningKey | null> {
  if (domain === ctx.config.MANAGED_DOMAIN.toLowerCase()) {
    const key = await managedDkimKey(ctx.sql, ctx.keys, domain)
    return { domain, selector: key.selector, privateKeyPem: key.privateKeyPem }
  }
  if (orgId === null) return null
  const key = await dkimKeyFor(ctx.sql, ctx.keys, orgId, domain)
  return key ? { domain, ...key } : null
}

/**
 * The key that signs mail from `fromDomain` for the organization: the managed domain's key
 * (created on first use), or the key of a domain the organization holds verified; null otherwise.
 * `orgId` null (mail the service sends on its own behalf) can only use the managed domain's key.
 */
export async function signingKeyFor(ctx: AppContext, orgId: string | null, fromDomain: string): Promise<SigningKey | null> {
  const domain = canonical(fromDomain)
  const managed = domain === ctx.config.MANAGED_DOMAIN.toLowerCase()
  if (!managed && orgId === null) return null
  const cacheKey = managed ? `managed\n${domain}` : `${orgId}\n${domain}`
  const cache = keyCache(ctx)
  return (await cache.fetch(cacheKey, { context: { orgId, domain } })) ?? null
}

/** Drops cached keys: all of them, or one organization's key for one domain. */
export function forgetSigningKeys(ctx: AppContext, orgId?: string, domain?: string) {
  const cache = keyCache(ctx)
  if (orgId === undefined || domain === undefined) cache.clear()
  else cache.delete(`${orgId}\n${canonical(domain)}`)
}

/** The message with a DKIM-Signature header (relaxed/relaxed, rsa-sha256) in front of it. */
export async function dkimSign(raw: string, key: SigningKey, signTime = new Date()): Promise<string> {
  // A bare LF is read differently by us and by the receiver's canonicalization: the signature would not verify.
  if (/(?<!\r)\n|\r(?!\n)/.test(raw)) throw new Error('dkimSign: the message must use CRLF line endings only')
  const options = {
    canonicalization: 'relaxed/relaxed',
    headerList: SIGNED_HEADERS,
    signTime,
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }],
  } as Partial<DKIMSignOptions> as DKIMSignOptions
  const result = await mailauthSign(raw, options)
  if (!result.signatures) {
    const why = result.errors?.map(e => e.err?.message ?? 'unknown error').join('; ') || 'no signature produced'
    throw new RelayError('outbound_key_invalid', `DKIM signing with ${key.selector}._domainkey.${key.domain} failed: ${why}`, false)
  }
  return result.signatures + raw
}
