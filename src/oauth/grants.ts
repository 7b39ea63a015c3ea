/** Grants and the token pairs issued under them. Tokens exist in clear only in the response that carries them. */
import { randomUUIDv7 } from 'bun'
import { randomToken, sha256 } from '../crypto'
import type { Tx } from '../db/client'
import { ACCESS_TOKEN_PREFIX, ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_PREFIX, REFRESH_TOKEN_TTL_SECONDS, SCOPE } from './constants'
import { insertGrant, insertToken } from './queries'

export interface TokenSet {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: string
}

/**
 * Records that a person authorized a client in an organization; returns the grant id. `resource`:
 * the RFC 8707 resource its tokens are for (null: the REST API); `scope`: full by default.
 */
export async function createGrant(tx: Tx, g: { clientId: string; userId: string; orgId: string; scope?: string; resource?: string | null }): Promise<string> {
  const id = randomUUIDv7()
  await insertGrant(tx, { id, clientId: g.clientId, userId: g.userId, orgId: g.orgId, scope: g.scope ?? SCOPE, resource: g.resource ?? null })
  return id
}

/** A new access token (1 hour) and refresh token (90 days) under a grant of `scope`. */
export async function issueTokens(tx: Tx, grantId: string, scope: string = SCOPE): Promise<TokenSet> {
  const access = randomToken(ACCESS_TOKEN_PREFIX)
  const refresh = randomToken(REFRESH_TOKEN_PREFIX)
  await insertToken(tx, { hash: sha256(access), grantId, kind: 'access', ttlSeconds: ACCESS_TOKEN_TTL_SECONDS })
  await insertToken(tx, { hash: sha256(refresh), grantId, kind: 'refresh', ttlSeconds: REFRESH_TOKEN_TTL_SECONDS })
  return { access_token: access, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_SECONDS, refresh_token: refresh, scope }
}
