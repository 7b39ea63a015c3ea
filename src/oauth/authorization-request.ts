/**
 * Checking the query of GET /oauth/authorize (RFC 6749 section 4.1.2.1, OAuth 2.1). Problems with
 * the client or the redirect URI are shown on an error page and never redirected, since the
 * redirect target itself is in doubt; every other problem goes back to the client as
 * `error=...` on its registered redirect URI.
 */
import type { Config } from '../config'
import type { Tx } from '../db/client'
import { READ_SCOPE, SCOPE, SCOPES } from './constants'
import { isFirstPartyClient } from './first-party'
import { findClient, type ClientRow } from './queries'

export interface AuthorizationRequest {
  client: ClientRow
  redirectUri: string
  codeChallenge: string
  state: string | null
  scope: string
  /** RFC 8707: the MCP server's URL, or null for the REST API */
  resource: string | null
}

export type Checked = { ok: true; request: AuthorizationRequest } | { ok: false; page: { title: string; message: string } } | { ok: false; redirect: Response }

/** BASE64URL(SHA-256(verifier)): always 43 characters (RFC 7636 section 4.2). */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/
const MAX_STATE_LENGTH = 2048
const TWICE = Symbol('given more than once')

/** Redirects to a registered redirect URI with parameters added to its query. */
export function redirectTo(redirectUri: string, params: Record<string, string | null | undefined>, status: 302 | 303): Response {
  const url = new URL(redirectUri)
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) url.searchParams.append(k, v)
  return new Response(null, { status, headers: { location: url.href, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } })
}

export async function checkAuthorizationRequest(sql: Tx, config: Config, query: URLSearchParams): Promise<Checked> {
  // RFC 6749 section 3.1: no parameter twice; an empty one counts as absent
  const one = (name: string): string | undefined | typeof TWICE => {
    const values = query.getAll(name).filter(v => v !== '')
    return values.length > 1 ? TWICE : values[0]
  }
  const refuse = (message: string) => ({ ok: false as const, page: { title: 'Authorization request refused', message } })

  const clientId = one('client_id')
  if (clientId === TWICE) return refuse('client_id was given more than once.')
  if (!clientId) return refuse('The request names no client (client_id is missing).')
  const client = await findClient(sql, clientId)
  // the service's own clients get their grants from the CLI login and the signups, never here
  if (!client || isFirstPartyClient(client.id)) return refuse('The application is not registered here (unknown client_id).')
  const redirectUri = one('redirect_uri')
  if (redirectUri === TWICE) return refuse('redirect_uri was given more than once.')
  if (!redirectUri) return refuse('The request has no redirect_uri.')
  if (!client.redirect_uris.includes(redirectUri)) return refuse('redirect_uri does not exactly match a redirect URI registered for this application.')

  const rawState = one('state')
  const state = typeof rawState === 'string' && rawState.length <= MAX_STATE_LENGTH ? rawState : null
  const fail = (error: string, description: string) => ({
    ok: false as const,
    redirect: redirectTo(redirectUri, { error, error_description: description, state, iss: config.PUBLIC_URL }, 302),
  })
  for (const name of ['response_type', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource']) {
    if (one(name) === TWICE) return fail('invalid_request', `${name}: must be given at most once`)
  }
  if (typeof rawState === 'string' && rawState.length > MAX_STATE_LENGTH)
    return fail('invalid_request', `state: must be at most ${MAX_STATE_LENGTH} characters`)
  const responseType = one('response_type')
  if (!responseType) return fail('invalid_request', 'response_type: is required (code)')
  if (responseType !== 'code') return fail('unsupported_response_type', 'response_type: only code is supported')
  const challenge = one('code_challenge') as string | undefined
  if (!challenge) return fail('invalid_request', 'code_challenge: is required (PKCE with S256)')
  const method = one('code_challenge_method')
  if (method !== 'S256') return fail('invalid_request', 'code_challenge_method: must be S256 (plain is not accepted)')
  if (!S256_CHALLENGE.test(challenge)) return fail('invalid_request', 'code_challenge: must be the 43-character base64url SHA-256 of the code verifier')
  const scope = grantedScope(one('scope') as string | undefined)
  if (scope === null) return fail('invalid_scope', `scope: only ${SCOPES.join(' or ')} is available`)
  // RFC 8707: a client may name the resource it wants a token for: the REST API or the MCP server
  const resource = resourceOf(config, one('resource') as string | undefined)
  if (resource === undefined) return fail('invalid_target', `resource: must be ${config.PUBLIC_URL}/v1 or ${config.PUBLIC_URL}/mcp`)
  if (resource === null && scope !== SCOPE)
    return fail('invalid_scope', `scope: ${READ_SCOPE} is offered for the MCP server (resource ${config.PUBLIC_URL}/mcp) only`)
  return { ok: true, request: { client, redirectUri, codeChallenge: challenge, state, scope, resource } }
}

/**
 * The scope to grant for a requested one: full access when none or `service:api` is asked for
 * (alone or with `service:read`, which it covers), read-only for `service:read` alone; null for
 * anything else.
 */
export function grantedScope(requested: string | undefined): string | null {
  if (requested === undefined) return SCOPE
  const asked = requested.split(' ').filter(Boolean)
  if (!asked.length || asked.some(s => !(SCOPES as readonly string[]).includes(s))) return null
  return asked.includes(SCOPE) ? SCOPE : READ_SCOPE
}

/**
 * The resource a `resource` parameter names, as stored on the grant: null for the REST API (and
 * when none is named), the MCP server's URL for it; undefined for anything we do not serve.
 */
export function resourceOf(config: Config, value: string | undefined): string | null | undefined {
  const base = config.PUBLIC_URL
  if (value === undefined || [`${base}/v1`, `${base}/v1/`, base, `${base}/`].includes(value)) return null
  if (value === `${base}/mcp` || value === `${base}/mcp/`) return `${base}/mcp`
  return undefined
}
