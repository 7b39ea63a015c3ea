/**
 * Resolving an OAuth access token to the organization credential it stands for. Not cached:
 * the role is the authorizing person's current one (rule 1), so demotion, removal from the
 * organization, expiry and revocation all take effect on the next request, in every process.
 */
import type { Auth } from '../auth/principal'
import { planDefinition } from '../account/plans'
import { safeEqual, sha256 } from '../crypto'
import type { Sql } from '../db/client'
import { liveAccessToken } from './queries'

export async function resolveAccessToken(sql: Sql, token: string): Promise<Auth | null> {
  const hash = sha256(token)
  const row = await liveAccessToken(sql, hash)
  if (!row || !safeEqual(row.hash, hash)) return null
  return {
    orgId: row.org_id,
    keyId: row.grant_id,
    userId: row.user_id,
    role: row.role,
    method: 'oauth',
    plan: row.plan,
    apiPerMinute: row.api_per_minute_override ?? planDefinition(row.plan).limits.api_per_minute,
    // null: issued without a resource indicator, for the REST API (the caller knows its URL)
    ...(row.resource !== null && { resource: row.resource }),
    scopes: row.scope.split(' '),
  }
}
