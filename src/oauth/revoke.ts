/**
 * POST /oauth/revoke (RFC 7009): revoking an access or a refresh token revokes its whole grant.
 * Unknown tokens get the same 200, so the endpoint tells nothing about which tokens exist.
 */
import type { AppContext } from '../context'
import { sha256 } from '../crypto'
import { LIMITS } from './constants'
import { findClient, findToken, revokeGrant } from './queries'
import { CORS, NO_STORE, oauthError, readForm, slowDown, throttle, type Server } from './responses'

export async function revokeEndpoint(ctx: AppContext, request: Request, body: unknown, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'revoke', LIMITS.revoke)
  if (retryAfter) return slowDown(retryAfter, 429)
  const read = readForm(request, body)
  if ('error' in read) return oauthError('invalid_request', read.error)
  const token = read.form.get('token')
  if (!token) return oauthError('invalid_request', 'token: is required')
  const clientId = read.form.get('client_id')
  if (clientId && !(await findClient(ctx.sql, clientId))) return oauthError('invalid_client', 'client_id: unknown client', 401)
  if (token.length <= 200) {
    const row = await findToken(ctx.sql, sha256(token))
    // A client names itself optionally; one that names another client revokes nothing.
    if (row && (!clientId || clientId === row.client_id)) await revokeGrant(ctx.sql, row.grant_id, 'revoked')
  }
  return new Response(null, { status: 200, headers: { ...NO_STORE, ...CORS } })
}
