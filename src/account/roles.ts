/**
 * Rule 1 of Authentication: credentials act at member level, and a few writes (credits, payout
 * addresses, spend policy, networks, registries) need the current owner or admin role of the
 * person behind the credential, read now from the organization's memberships.
 */
import type { Auth, Role } from '../auth/principal'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'

/** The current role of a person in an organization (null if they are not a member any more). */
export async function currentRole(sql: Sql | Tx, orgId: string, userId: string | null): Promise<Role | null> {
  if (!userId) return null
  const [row] = await sql<{ role: Role }[]>`select role from memberships where org_id = ${orgId} and user_id = ${userId}`
  return row?.role ?? null
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

/** An organization a person belongs to, with its name and their role. */
export interface Membership {
  org_id: string
  name: string
  role: Role
}

/** The organizations a person belongs to, by name. */
export async function membershipsOf(sql: Tx, userId: string): Promise<Membership[]> {
  return sql<Membership[]>`
    select m.org_id, o.name, m.role from memberships m join orgs o on o.id = m.org_id
     where m.user_id = ${userId} order by o.name, m.org_id`
}
