/**
 * POST /oauth/token: the authorization_code grant (PKCE S256, public clients) and the
 * refresh_token grant (single use, rotated; reuse revokes the grant). Multi-step outcomes run in
 * one transaction and are returned, not thrown, so that spending a code or revoking a grant
 * commits even when the answer is an error.
 */
import { createHash } from 'node:crypto'
import type { AppContext } from '../context'
import { sha256 } from '../crypto'
import type { Tx } from '../db/client'
import type { Config } from '../config'
import { grantedScope, resourceOf } from './authorization-request'
import { LIMITS, SCOPES } from './constants'
import { createGrant, issueTokens, type TokenSet } from './grants'
import { currentRole } from '../account/roles'
import { findClient, findToken, grantOfSpentCode, linkCodeToGrant, markTokenUsed, revokeGrant, spendCode, type ClientRow } from './queries'
import { oauthError, oauthJson, readForm, slowDown, throttle, type Form, type Server } from './responses'

/** RFC 7636 section 4.1: 43 to 128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

type Outcome = TokenSet | { error: string; description: string }

const invalidGrant = (description: string) => ({ error: 'invalid_grant', description })

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url')
}

function missing(form: Form, names: string[]): string | null {
  const absent = names.filter(n => !form.has(n))
  return absent.length ? `${absent.join(', ')}: ${absent.length > 1 ? 'are' : 'is'} required` : null
}

function answer(outcome: Outcome): Response {
  return 'error' in outcome ? oauthError(outcome.error, outcome.description) : oauthJson(outcome)
}

export async function tokenEndpoint(ctx: AppContext, request: Request, body: unknown, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'token', LIMITS.token)
  if (retryAfter) return slowDown(retryAfter)
  const read = readForm(request, body)
  if ('error' in read) return oauthError('invalid_request', read.error)
  const form = read.form

  // Public clients only: a client that tries to authenticate is not one of ours.
  if (request.headers.has('authorization') || form.has('client_secret') || form.has('client_assertion')) {
    return oauthError('invalid_client', 'only public clients are supported (token_endpoint_auth_method none): send client_id and no client credentials', 401)
  }
  const grantType = form.get('grant_type')
  if (!grantType) return oauthError('invalid_request', 'grant_type: is required')
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    return oauthError('unsupported_grant_type', 'grant_type: must be authorization_code or refresh_token')
  }
  const clientId = form.get('client_id')
  if (!clientId) return oauthError('invalid_request', 'client_id: is required')
  const client = await findClient(ctx.sql, clientId)
  if (!client) return oauthError('invalid_client', 'client_id: unknown client', 401)

  if (grantType === 'authorization_code') {
    const problem = missing(form, ['code', 'redirect_uri', 'code_verifier'])
    if (problem) return oauthError('invalid_request', problem)
    return answer(await ctx.sql.begin(tx => exchangeCode(tx, ctx.config, client, form)))
  }
  const problem = missing(form, ['refresh_token'])
  if (problem) return oauthError('invalid_request', problem)
  const scope = form.get('scope')
  if (scope !== undefined && grantedScope(scope) === null) {
    return oauthError('invalid_scope', `scope: only ${SCOPES.join(' or ')} is available`)
  }
  return answer(await ctx.sql.begin(tx => refresh(tx, ctx.config, client, form, form.get('refresh_token')!)))
}

/**
 * RFC 8707 section 2.2: a `resource` at the token endpoint must name the resource the grant is
 * for (we issue tokens for one resource per grant); leaving it out is fine.
 */
function sameResource(config: Config, form: Form, granted: string | null): Outcome | null {
  if (!form.has('resource')) return null
  const named = resourceOf(config, form.get('resource'))
  if (named === granted) return null
  return { error: 'invalid_target', description: `resource: this grant is for ${granted ?? `${config.PUBLIC_URL}/v1`}` }
}

async function exchangeCode(tx: Tx, config: Config, client: ClientRow, form: Form): Promise<Outcome> {
  const hash = sha256(form.get('code')!)
  const code = await spendCode(tx, hash)
  if (!code) {
    // RFC 6749 section 4.1.2: a code used twice revokes what its first use produced
    const grantId = await grantOfSpentCode(tx, hash)
    if (grantId) await revokeGrant(tx, grantId, 'code_reuse')
    return invalidGrant('code: unknown or already used')
  }
  if (!code.live) return invalidGrant('code: expired')
  if (code.client_id !== client.id) return invalidGrant('code: was issued to another client')
  if (code.redirect_uri !== form.get('redirect_uri')) return invalidGrant('redirect_uri: does not match the authorization request')
  const verifier = form.get('code_verifier')!
  if (!CODE_VERIFIER.test(verifier) || s256(verifier) !== code.code_challenge) {
    return invalidGrant('code_verifier: does not match the code_challenge; the code is spent')
  }
  if (!(await currentRole(tx, code.org_id, code.user_id))) return invalidGrant('the person who authorized is no longer a member of the organization')
  const target = sameResource(config, form, code.resource)
  if (target) return target
  const grantId = await createGrant(tx, { clientId: client.id, userId: code.user_id, orgId: code.org_id, scope: code.scope, resource: code.resource })
  await linkCodeToGrant(tx, hash, grantId)
  return issueTokens(tx, grantId, code.scope)
}

async function refresh(tx: Tx, config: Config, client: ClientRow, form: Form, token: string): Promise<Outcome> {
  const hash = sha256(token)
  const row = await findToken(tx, hash, { lock: true })
  if (row?.kind !== 'refresh') return invalidGrant('refresh_token: unknown')
  if (row.client_id !== client.id) return invalidGrant('refresh_token: was issued to another client')
  if (row.grant_revoked) return invalidGrant('refresh_token: revoked')
  if (row.used) {
    // a rotated token came back: either the client or a thief holds a copy, so end the grant
    await revokeGrant(tx, row.grant_id, 'refresh_token_reuse')
    return invalidGrant('refresh_token: already used; the grant is revoked')
  }
  if (!row.live) return invalidGrant('refresh_token: expired')
  if (!(await currentRole(tx, row.org_id, row.user_id))) {
    await revokeGrant(tx, row.grant_id, 'membership_ended')
    return invalidGrant('the person who authorized is no longer a member of the organization; the grant is revoked')
  }
  const target = sameResource(config, form, row.resource)
  if (target) return target
  await markTokenUsed(tx, hash)
  return issueTokens(tx, row.grant_id, row.scope)
}
