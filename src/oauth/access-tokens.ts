/**
 * Resolving an OAuth access token to the organization credential it stands for. Not cached:
 * the role is the authorizing person's current one (rule 1), so demotion, removal from the
 * organization, expiry and revocation all take effect on the next request, in every process.
 */
import { membershipsAs, orgsAs } from '../account/orgs'
import type { Auth, Role } from '../auth/principal'
import { planDefinition, type Plan } from '../account/plans'
import { safeEqual, sha256 } from '../crypto'
import type { Sql } from '../db/client'

interface AccessRow {
  hash: Buffer
  grant_id: string
  org_id: string
  user_id: string
  role: Role
  plan: Plan
  api_per_minute_override: number | null
  resource: string | null
  scope: string
}

export async function resolveAccessToken(sql: Sql, token: string): Promise<Auth | null> {
  const hash = sha256(token)
  const [row] = await sql<AccessRow[]>`
    select t.hash, g.id as grant_id, g.org_id, g.user_id, m.role, o.plan, o.api_per_minute_override, g.resource, g.scope
      from oauth_tokens t
      join oauth_grants g on g.id = t.grant_id
      join ${membershipsAs(sql, 'm')} on m.org_id = g.org_id and m.user_id = g.user_id
      join ${orgsAs(sql, 'o')} on o.id = g.org_id
     where t.hash = ${hash} and t.kind = 'access' and t.expires_at > now() and g.revoked_at is null`
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
