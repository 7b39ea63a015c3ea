/**
 * Rule 1 of Authentication: credentials act at member level, and a few writes (credits, payout
 * addresses, spend policy, networks, registries) need the current owner or admin role of the
 * person behind the credential, read now from the organization's memberships.
 */
import type { Auth, Role } from '../auth/principal'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { memberRole } from './membership-queries'

/** The current role of a person in an organization (null if they are not a member any more, or no person is named). */
export async function currentRole(sql: Sql | Tx, orgId: string, userId: string | null): Promise<Role | null> {
  if (!userId) return null
  return memberRole(sql, orgId, userId)
}

/** Throws `forbidden` unless the role is one of `allowed`. */
export function requireRole(role: Role, allowed: Role[], action: string) {
  if (!allowed.includes(role)) throw errors.forbidden(`${action}: needs the ${allowed.join(' or ')} role`)
}

/**
 * 403 forbidden unless the person who created the credential is an owner or admin now: a key
 * created by a member, or a key without a creator, is refused.
 */
export async function requireOwnerOrAdmin(sql: Sql, auth: Auth, action: string) {
  const role = await currentRole(sql, auth.orgId, auth.userId)
  if (!role) throw errors.forbidden(`${action}: needs a credential created by an owner or admin`)
  requireRole(role, ['owner', 'admin'], action)
}
