/**
 * Signed download URLs for a message's raw bytes and attachments (webhook payloads carry
 * them). A token names the email and its organization and expires after 24 hours; an API key
 * on the same URL without a token works for as long as the key does.
 */
import type { ServerKeys } from '../crypto'
import { ApiError } from '../errors'

export const DOWNLOAD_TOKEN_TTL_SECONDS = 24 * 60 * 60
const PURPOSE = 'download-token'

/** `ttlSeconds`: 24 hours for webhook payloads; the MCP tools hand out shorter-lived links. */
export function signDownloadToken(keys: ServerKeys, emailId: string, orgId: string, now = Date.now(), ttlSeconds = DOWNLOAD_TOKEN_TTL_SECONDS): string {
  const body = Buffer.from(JSON.stringify({ e: emailId, o: orgId, x: Math.floor(now / 1000) + ttlSeconds })).toString('base64url')
  return `${body}.${keys.sign(PURPOSE, body)}`
}

/** The organization the token grants access to `emailId` for; throws download_token_invalid/expired. */
export function verifyDownloadToken(keys: ServerKeys, token: string, emailId: string, now = Date.now()): string {
  const invalid = new ApiError('download_token_invalid', 'token: failed verification')
  const [body, signature, extra] = token.split('.')
  if (!body || !signature || extra !== undefined || !keys.verify(PURPOSE, body, signature)) throw invalid
  let claims: { e?: unknown; o?: unknown; x?: unknown }
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString())
  } catch {
    throw invalid
  }
  if (claims.e !== emailId || typeof claims.o !== 'string' || typeof claims.x !== 'number') throw invalid
  if (claims.x * 1000 < now) {
    throw new ApiError('download_token_expired', 'token: expired (signed download URLs are valid for 24 hours, or less when a tool issued them)', {
      remediation: 'Request the same URL without the token parameter, with your API key in the Authorization header; that does not expire.',
    })
  }
  return claims.o
}

export function downloadUrls(publicUrl: string, keys: ServerKeys, emailId: string, orgId: string) {
  const token = signDownloadToken(keys, emailId, orgId)
  return {
    raw_url: `${publicUrl}/v1/emails/${emailId}/raw?token=${token}`,
    attachments_url: `${publicUrl}/v1/emails/${emailId}/attachments.tar.gz?token=${token}`,
  }
}
