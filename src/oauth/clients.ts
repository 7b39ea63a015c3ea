/**
 * POST /oauth/register (RFC 7591): dynamic registration of public clients. Redirect URIs are
 * HTTPS, or plain HTTP on a loopback host (native apps, RFC 8252 section 7.3), never with a
 * fragment; they are matched exactly at authorization time. Unknown metadata is ignored
 * (RFC 7591 section 2); metadata that asks for something we do not offer is refused.
 */
import type { AppContext } from '../context'
import { randomToken } from '../crypto'
import { CLIENT_ID_PREFIX, LIMITS, MAX_REDIRECT_URIS, SCOPE, SCOPES } from './constants'
import { insertClient, type ClientRow } from './queries'
import { oauthError, oauthJson, slowDown, throttle, type Server } from './responses'

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])
const MAX_URI_LENGTH = 2000
/** A DNS name (IDNs arrive in punycode) or a bracketed IPv6 address; the page's CSP names this origin. */
const HOST = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])$/

/** Why a redirect URI cannot be registered, or null when it can. */
export function redirectUriProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0) return 'must be a non-empty string'
  if (value.length > MAX_URI_LENGTH) return `must be at most ${MAX_URI_LENGTH} characters`
  if (value.includes('#')) return 'must not contain a fragment'
  // URL parsing quietly repairs these; a redirect URI is compared byte for byte, so refuse them
  if (/[\s\\\u0000-\u001f\u007f]/.test(value)) return 'must not contain whitespace, control characters or backslashes'
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be an absolute URI'
  }
  if (url.username || url.password) return 'must not contain user information'
  if (!HOST.test(url.hostname)) return 'must name a valid host'
  if (url.protocol === 'https:') return url.hostname ? null : 'must name a host'
  if (url.protocol === 'http:')
    return LOOPBACK_HOSTS.has(url.hostname) ? null : 'must use https; http is allowed only on a loopback host (localhost, 127.0.0.1, [::1])'
  return 'must use https (or http on a loopback host)'
}

type Metadata = Record<string, unknown>
type Checked = { name: string | null; redirectUris: string[] } | { error: 'invalid_redirect_uri' | 'invalid_client_metadata'; description: string }

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every(x => typeof x === 'string')

export function checkRegistration(m: Metadata): Checked {
  const uris = m.redirect_uris
  if (!Array.isArray(uris) || uris.length === 0) return { error: 'invalid_redirect_uri', description: 'redirect_uris: must be an array of 1 to 20 URIs' }
  if (uris.length > MAX_REDIRECT_URIS) return { error: 'invalid_redirect_uri', description: `redirect_uris: at most ${MAX_REDIRECT_URIS} per client` }
  for (const [i, uri] of uris.entries()) {
    const problem = redirectUriProblem(uri)
    if (problem) return { error: 'invalid_redirect_uri', description: `redirect_uris[${i}]: ${problem}` }
  }
  const bad = (description: string) => ({ error: 'invalid_client_metadata' as const, description })
  let name: string | null = null
  if (m.client_name !== undefined && m.client_name !== null) {
    if (typeof m.client_name !== 'string') return bad('client_name: must be a string')
    name = m.client_name.trim()
    if (name.length < 1 || name.length > 200) return bad('client_name: must be 1 to 200 characters')
    if (/[\u0000-\u001f\u007f]/.test(name)) return bad('client_name: must not contain control characters')
  }
  if (m.token_endpoint_auth_method !== undefined && m.token_endpoint_auth_method !== 'none') {
    return bad('token_endpoint_auth_method: only none is supported (public clients)')
  }
  if (m.grant_types !== undefined) {
    if (
      !isStringArray(m.grant_types) ||
      !m.grant_types.includes('authorization_code') ||
      m.grant_types.some(g => g !== 'authorization_code' && g !== 'refresh_token')
    ) {
      return bad('grant_types: must be authorization_code, optionally with refresh_token')
    }
  }
  if (m.response_types !== undefined && (!isStringArray(m.response_types) || m.response_types.some(r => r !== 'code'))) {
    return bad('response_types: only code is supported')
  }
  // MCP clients register with the protected resource's scopes_supported, so every scope we advertise is accepted
  if (m.scope !== undefined && (typeof m.scope !== 'string' || m.scope.split(' ').some(s => !(SCOPES as readonly string[]).includes(s)))) {
    return bad(`scope: only ${SCOPES.join(' and ')} are available`)
  }
  return { name, redirectUris: [...new Set(uris as string[])] }
}

export function presentClient(c: ClientRow) {
  return {
    client_id: c.id,
    client_id_issued_at: Math.floor(c.created_at.getTime() / 1000),
    ...(c.client_name !== null && { client_name: c.client_name }),
    redirect_uris: c.redirect_uris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    scope: SCOPE,
  }
}

export async function registerEndpoint(ctx: AppContext, request: Request, body: unknown, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'register', LIMITS.register)
  if (retryAfter) return slowDown(retryAfter, 429)
  const type = request.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase()
  if (type !== 'application/json' || !body || typeof body !== 'object' || Array.isArray(body)) {
    return oauthError('invalid_client_metadata', 'the body must be a JSON object (Content-Type application/json)')
  }
  const checked = checkRegistration(body as Metadata)
  if ('error' in checked) return oauthError(checked.error, checked.description)
  const client = await insertClient(ctx.sql, { id: randomToken(CLIENT_ID_PREFIX, 16), name: checked.name, redirectUris: checked.redirectUris })
  return oauthJson(presentClient(client), 201)
}
