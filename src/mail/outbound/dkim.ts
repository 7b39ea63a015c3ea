/** DKIM for outbound mail: which key signs a message, and the signature itself (mailauth). */
import { createPrivateKey, sign as rsaSign, type KeyObject } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { dkimSign as mailauthSign } from 'mailauth/lib/dkim/sign'
import { dkimBody } from 'mailauth/lib/dkim/body'
import { generateCanonicalizedHeader } from 'mailauth/lib/dkim/header'
import { formatSignatureHeaderLine, getSigningHeaderLines, parseHeaders } from 'mailauth/lib/tools'
import type { DKIMSignOptions } from 'mailauth'
import type { AppContext } from '../../context'
import { dkimKeyFor } from '../../domains/service'
import { managedDkimKey } from './managed-key'
import { RelayError } from './relay-types'

export interface SigningKey {
  domain: string
  selector: string
  privateKeyPem: string
  /** the PEM parsed once (signingKeyFor sets it): signing skips parsing the PEM again */
  privateKey?: KeyObject
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
const FIELD_NAMES = SIGNED_HEADERS.join(':')

const canonical = (domain: string) => domain.trim().toLowerCase().replace(/\.$/, '')

/**
 * Keys are fetched, decrypted and parsed once a minute at most per process and organization +
 * domain (the managed domain's key is the same for everyone). A key never changes in place: a
 * domain deleted and claimed again gets a new one, which takes a new DNS record and a
 * verification first, so a minute of the old one is harmless. "No key" is not cached, so a
 * domain that was just verified signs at once, and neither is a key that does not parse.
 */
const KEY_TTL_MS = 60_000
const caches = new WeakMap<AppContext, LRUCache<string, SigningKey, { orgId: string | null; domain: string }>>()

function keyCache(ctx: AppContext) {
  let cache = caches.get(ctx)
  if (!cache) {
    cache = new LRUCache<string, SigningKey, { orgId: string | null; domain: string }>({
      max: 10_000,
      ttl: KEY_TTL_MS,
      // concurrent first uses share one fetch; undefined (no key) is not stored
      fetchMethod: async (_key, _stale, { context }) => (await loadKey(ctx, context.orgId, context.domain)) ?? undefined,
    })
    caches.set(ctx, cache)
  }
  return cache
}

async function loadKey(ctx: AppContext, orgId: string | null, domain: string): Promise<SigningKey | null> {
  if (domain === ctx.config.MANAGED_DOMAIN.toLowerCase()) {
    const key = await managedDkimKey(ctx.sql, ctx.keys, domain)
    return withParsedKey({ domain, selector: key.selector, privateKeyPem: key.privateKeyPem })
  }
  if (orgId === null) return null
  const key = await dkimKeyFor(ctx.sql, ctx.keys, orgId, domain)
  return key ? withParsedKey({ domain, ...key }) : null
}

function withParsedKey(key: SigningKey): SigningKey {
  try {
    // not enumerable: the key object stays out of logs and comparisons
    return Object.defineProperty(key, 'privateKey', { value: createPrivateKey(key.privateKeyPem), enumerable: false })
  } catch {
    return key // unusable: mailauth reports why when it is used (outbound_key_invalid)
  }
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
  const key = await cache.fetch(cacheKey, { context: { orgId, domain } })
  if (key && !key.privateKey) cache.delete(cacheKey)
  return key ?? null
}

/** Drops cached keys: all of them, or one organization's key for one domain. */
export function forgetSigningKeys(ctx: AppContext, orgId?: string, domain?: string) {
  const cache = caches.get(ctx)
  if (!cache) return
  if (orgId === undefined || domain === undefined) cache.clear()
  else cache.delete(`${orgId}\n${canonical(domain)}`)
}

/** The message with a DKIM-Signature header (relaxed/relaxed, rsa-sha256) in front of it. */
export async function dkimSign(raw: string, key: SigningKey, signTime = new Date()): Promise<string> {
  // A bare LF is read differently by us and by the receiver's canonicalization: the signature would not verify.
  if (/(?<!\r)\n|\r(?!\n)/.test(raw)) throw new Error('dkimSign: the message must use CRLF line endings only')
  const signature = key.privateKey && signWithKeyObject(raw, key, key.privateKey, signTime)
  if (signature) return signature + raw
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

// the characters mailauth accepts in d= and s= without further checks
const PLAIN_TAG_VALUE = /^[\x21-\x3a\x3c-\x7e]+$/

/**
 * What mailauth's DkimSigner produces for this message (relaxed/relaxed, rsa-sha256, our header
 * list, no i=, l= or x=), made from its own canonicalization pieces but signed with the parsed
 * key, since mailauth takes only a PEM and parses it for every message (a test compares both
 * byte for byte). Null for anything out of the ordinary, which is left to mailauth.
 */
function signWithKeyObject(raw: string, key: SigningKey, privateKey: KeyObject, signTime: Date): string | null {
  if (privateKey.asymmetricKeyType !== 'rsa' || !PLAIN_TAG_VALUE.test(key.domain) || !PLAIN_TAG_VALUE.test(key.selector)) return null
  const bytes = Buffer.from(raw)
  const end = bytes.indexOf('\r\n\r\n')
  // no header section, or no body: mailauth's parser has its own rules for those
  if (end <= 0 || bytes[0] === 0x0d) return null
  const headers = parseHeaders(bytes.subarray(0, end + 4))
  const signing = getSigningHeaderLines(headers.parsed, FIELD_NAMES)
  if (!signing.headers.some(h => h.key === 'from')) return null
  const body = dkimBody('relaxed', 'sha256', false)
  if (bytes.length > end + 4) body.update(bytes.subarray(end + 4))
  const { canonicalizedHeader, dkimHeaderOpts } = generateCanonicalizedHeader('DKIM', signing, {
    signingDomain: key.domain,
    selector: key.selector,
    algorithm: 'rsa-sha256',
    canonicalization: 'relaxed/relaxed',
    signTime,
    timestamp: Math.floor(signTime.getTime() / 1000),
    expiration: false,
    identity: false,
    instance: false,
    bodyHash: body.digest('base64'),
  })
  dkimHeaderOpts.b = rsaSign('rsa-sha256', canonicalizedHeader, privateKey).toString('base64')
  return formatSignatureHeaderLine('DKIM', dkimHeaderOpts, true) + '\r\n'
}
