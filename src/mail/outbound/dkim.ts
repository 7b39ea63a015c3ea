/** DKIM for outbound mail: which key signs a message, and the signature itself (mailauth). */
import { dkimSign as mailauthSign } from 'mailauth/lib/dkim/sign'
import type { DKIMSignOptions } from 'mailauth'
import type { AppContext } from '../../context'
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
 * The key that signs mail from `fromDomain` for the organization: the managed domain's key
 * (created on first use), or the key of a domain the organization holds verified; null otherwise.
 * `orgId` null (mail the service sends on its own behalf) can only use the managed domain's key.
 */
export async function signingKeyFor(ctx: AppContext, orgId: string | null, fromDomain: string): Promise<SigningKey | null> {
  const domain = canonical(fromDomain)
  if (domain === ctx.config.MANAGED_DOMAIN.toLowerCase()) {
    const key = await managedDkimKey(ctx.sql, ctx.keys, domain)
    return { domain, selector: key.selector, privateKeyPem: key.privateKeyPem }
  }
  if (orgId === null) return null
  const key = await dkimKeyFor(ctx.sql, ctx.keys, orgId, domain)
  return key ? { domain, ...key } : null
}

/** The message with a DKIM-Signature header (relaxed/relaxed, rsa-sha256) in front of it. */
export async function dkimSign(raw: string, key: SigningKey): Promise<string> {
  // A bare LF is read differently by us and by the receiver's canonicalization: the signature would not verify.
  if (/(?<!\r)\n|\r(?!\n)/.test(raw)) throw new Error('dkimSign: the message must use CRLF line endings only')
  const options = {
    canonicalization: 'relaxed/relaxed',
    headerList: SIGNED_HEADERS,
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }],
  } as Partial<DKIMSignOptions> as DKIMSignOptions
  const result = await mailauthSign(raw, options)
  if (!result.signatures) {
    const why = result.errors?.map(e => e.err?.message ?? 'unknown error').join('; ') || 'no signature produced'
    throw new RelayError('outbound_key_invalid', `DKIM signing with ${key.selector}._domainkey.${key.domain} failed: ${why}`, false)
  }
  return result.signatures + raw
}
