/** The memberships table (account/ owns it): who belongs to which organization, in which role. */
import type postgres from 'postgres'
import type { Role } from '../auth/principal'
import type { Sql, Tx } from '../db/client'

/** Adds a member with the role `member`, leaving an existing membership's role as it is. */
export async function addMemberUnlessPresent(tx: Tx, orgId: string, userId: string): Promise<void> {
  await tx`insert into memberships (org_id, user_id, role) values (${orgId}, ${userId}, 'member') on conflict (org_id, user_id) do nothing`
}

/** The organization's first owner, or null. */
export async function firstOwner(sql: Tx, orgId: string): Promise<string | null> {
  const [owner] = await sql<{ user_id: string }[]>`select user_id from memberships where org_id = ${orgId} and role = 'owner' order by created_at limit 1`
  return owner?.user_id ?? null
}

/** `memberships` under `alias`, for a statement of another folder that reads a role in its own round trip. */
export const membershipsAs = (sql: Tx, alias: string): postgres.Fragment => sql`memberships ${sql(alias)}`

export async function addMember(tx: Tx, orgId: string, userId: string, role: Role) {
  await tx`
    insert into memberships (org_id, user_id, role) values (${orgId}, ${userId}, ${role})
    on conflict (org_id, user_id) do update set role = excluded.role`
}

/** The role of a person in an organization, or null if they are not a member. */
export async function memberRole(sql: Sql | Tx, orgId: string, userId: string): Promise<Role | null> {
  const [row] = await sql<{ role: Role }[]>`select role from memberships where org_id = ${orgId} and user_id = ${userId}`
  return row?.role ?? null
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
