/**
 * DKIM for outbound mail: which key signs a message, and the signature itself, made with
 * mailauth's canonicalization and header formatting (the same bytes its dkimSign makes) around a
 * node:crypto signature with the key parsed once (mailauth's dkimSign parses the PEM for every
 * message, and streams the message through its parser).
 */
import { createRequire } from 'node:module'
import { createPrivateKey, sign as rsaSign, type KeyObject } from 'node:crypto'
import { LRUCache } from 'lru-cache'
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
  'From',
  'Sender',
  'Reply-To',
  'To',
  'Cc',
  'Subject',
  'Date',
  'Message-ID',
  'In-Reply-To',
  'References',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
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

// mailauth's building blocks of a signature (plain JavaScript, no types of their own)
const require = createRequire(import.meta.url)
type HeaderLines = { headers: { key: string }[] }
const { parseHeaders, getSigningHeaderLines, formatSignatureHeaderLine } = require('mailauth/lib/tools') as {
  parseHeaders(buf: Buffer): { parsed: unknown[] }
  getSigningHeaderLines(parsed: unknown[], fieldNames: string): HeaderLines
  formatSignatureHeaderLine(type: 'DKIM', opts: Record<string, unknown>, folded: boolean): string
}
const { dkimBody } = require('mailauth/lib/dkim/body') as {
  dkimBody(canonicalization: string, hash: string, maxLength: false): { update(chunk: Buffer): void; digest(encoding: 'base64'): string }
}
const { generateCanonicalizedHeader } = require('mailauth/lib/dkim/header') as {
  generateCanonicalizedHeader(
    type: 'DKIM',
    lines: HeaderLines,
    options: Record<string, unknown>,
  ): { canonicalizedHeader: Buffer; dkimHeaderOpts: Record<string, unknown> }
}
const SIGNED_FIELDS = SIGNED_HEADERS.join(':')
/** Keys parsed once, by their PEM (a key never changes in place). */
const parsedKeys = new LRUCache<string, KeyObject>({ max: 1_000 })

function privateKeyOf(key: SigningKey): KeyObject {
  let parsed = parsedKeys.get(key.privateKeyPem)
  if (!parsed) {
    parsed = createPrivateKey(key.privateKeyPem)
    if (parsed.asymmetricKeyType !== 'rsa') throw new Error(`not an RSA key (${parsed.asymmetricKeyType})`)
    if ((parsed.asymmetricKeyDetails?.modulusLength ?? 0) < 1024) throw new Error('RSA key too short (at least 1024 bits)')
    parsedKeys.set(key.privateKeyPem, parsed)
  }
  return parsed
}

/** The message with a DKIM-Signature header (relaxed/relaxed, rsa-sha256) in front of it. */
export async function dkimSign(raw: string, key: SigningKey, signTime = new Date()): Promise<string> {
  // A bare LF is read differently by us and by the receiver's canonicalization: the signature would not verify.
  if (/(?<!\r)\n|\r(?!\n)/.test(raw)) throw new Error('dkimSign: the message must use CRLF line endings only')
  try {
    if (!/^[a-z0-9.-]+$/i.test(key.domain) || !/^[a-z0-9._-]+$/i.test(key.selector)) throw new Error(`invalid d= or s= value`)
    const privateKey = privateKeyOf(key)
    const bytes = Buffer.from(raw)
    const end = bytes.indexOf('\r\n\r\n')
    const lines = getSigningHeaderLines(parseHeaders(end < 0 ? bytes : bytes.subarray(0, end + 2)).parsed, SIGNED_FIELDS)
    if (!lines.headers.some(h => h.key === 'from')) throw new Error('Can not sign a message that has no From header')
    const body = dkimBody('relaxed', 'sha256', false)
    if (end >= 0) body.update(bytes.subarray(end + 4))
    const { canonicalizedHeader, dkimHeaderOpts } = generateCanonicalizedHeader('DKIM', lines, {
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
    return formatSignatureHeaderLine('DKIM', dkimHeaderOpts, true) + '\r\n' + raw
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error)
    throw new RelayError('outbound_key_invalid', `DKIM signing with ${key.selector}._domainkey.${key.domain} failed: ${why}`, false)
  }
}
