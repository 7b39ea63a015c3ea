/**
 * Organization agent networks: an owner or admin creates one (the organization becomes its
 * owner member), invites other organizations by id, sets each member's can_view, and removes
 * members; an invited organization's owner or admin accepts, and any member leaves by removing
 * itself (the owner organization deletes the network instead). Only the members of a network
 * see it: to anyone else it is 404.
 *
 * Invitations go to any organization id, so they are bounded: an organization sends at most
 * INVITATIONS_PER_MINUTE, and one that declines (or leaves) may block the inviter, whose later
 * invitations to it are then 404 like an unknown id (the inviter cannot tell a block from a
 * typo). A block stays until the blocking organization lifts it.
 */
import { orgsAs } from '../account/orgs'
import { randomUUIDv7 } from 'bun'
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import type { Sql, Tx } from '../db/client'
import { isUniqueViolation } from '../db/errors'
import { requireOwnerOrAdmin } from '../account/roles'
import { errors } from '../errors'
import { rateLimiter, rateLimitError } from '../http/rate-limit'
import { iso } from '../http/timestamps'
import { listPage, type PageRequest } from '../http/pagination'
import type { Network, NetworkMember } from './model'

interface NetworkRow {
  id: string
  name: string
  description: string
  owner_org_id: string
  status: 'invited' | 'active'
  can_view: boolean
  member_count: number
  created_at: Date
}

export interface Membership {
  status: 'invited' | 'active'
  can_view: boolean
  is_owner: boolean
}

const networkColumns = (sql: Tx) => sql`
  n.id, n.name, n.description, n.owner_org_id, m.status, m.can_view, n.created_at,
  (select count(*)::int from network_members a where a.network_id = n.id and a.status = 'active') as member_count`

/** A network as the organization `orgId` sees it. */
export const presentFor =
  (orgId: string) =>
  (row: NetworkRow): Static<typeof Network> => ({
    id: row.id,
    name: row.name,
    description: row.description,
    owner_org_id: row.owner_org_id,
    membership: { status: row.status, can_view: row.can_view, is_owner: row.owner_org_id === orgId },
    member_count: row.member_count,
    created_at: iso(row.created_at)!,
  })

/** The caller organization's membership of a network; 404 when it has none (invisible). */
export async function membershipOf(sql: Tx, orgId: string, networkId: string): Promise<Membership & { owner_org_id: string }> {
  const [row] = await sql<(Membership & { owner_org_id: string })[]>`
    select m.status, m.can_view, n.owner_org_id, n.owner_org_id = m.org_id as is_owner
      from network_members m join networks n on n.id = m.network_id
     where m.network_id = ${networkId} and m.org_id = ${orgId}`
  if (!row) throw errors.notFound('network')
  return row
}

/** The owner organization's owner or admin; others get 403 (members) or 404 (strangers). */
async function requireNetworkManager(sql: Sql, auth: Auth, networkId: string, action: string) {
  const membership = await membershipOf(sql, auth.orgId, networkId)
  if (!membership.is_owner) throw errors.forbidden(`${action}: only the organization that owns the network manages it`)
  await requireOwnerOrAdmin(sql, auth, action)
}

export async function getNetwork(sql: Sql, orgId: string, id: string): Promise<Static<typeof Network>> {
  const [row] = await sql<NetworkRow[]>`
    select ${networkColumns(sql)} from networks n join network_members m on m.network_id = n.id and m.org_id = ${orgId}
     where n.id = ${id}`
  if (!row) throw errors.notFound('network')
  return presentFor(orgId)(row)
}

/**
 * A page of the networks the organization belongs to or is invited to, newest first. A
 * connection key sees only those it may browse (active, can_view).
 */
export async function listNetworks(sql: Sql, auth: Auth, page: PageRequest) {
  const onlyViewable = auth.method === 'connection'
  return listPage<NetworkRow>(sql, {
    columns: networkColumns(sql),
    from: sql`networks n join network_members m on m.network_id = n.id and m.org_id = ${auth.orgId}`,
    where: onlyViewable ? sql`m.status = 'active' and m.can_view` : sql`true`,
    page,
    idColumn: 'n.id',
  })
}

export async function createNetwork(sql: Sql, auth: Auth, input: { name: string; description?: string }): Promise<Static<typeof Network>> {
  await requireOwnerOrAdmin(sql, auth, 'networks')
  const id = randomUUIDv7()
  await sql.begin(async tx => {
    await tx`insert into networks (id, owner_org_id, name, description) values (${id}, ${auth.orgId}, ${input.name}, ${input.description ?? ''})`
    await tx`insert into network_members (network_id, org_id, status, can_view, joined_at) values (${id}, ${auth.orgId}, 'active', true, now())`
  })
  return getNetwork(sql, auth.orgId, id)
}

export async function updateNetwork(sql: Sql, auth: Auth, id: string, input: { name?: string; description?: string }): Promise<Static<typeof Network>> {
  await requireNetworkManager(sql, auth, id, 'networks')
  await sql`
    update networks set name = coalesce(${input.name ?? null}, name), description = coalesce(${input.description ?? null}, description), updated_at = now()
     where id = ${id}`
  return getNetwork(sql, auth.orgId, id)
}

/** Deletes the network: its memberships go, contacts admitted through it lose their send grant. */
export async function deleteNetwork(sql: Sql, auth: Auth, id: string): Promise<{ id: string; deleted: true }> {
  await requireNetworkManager(sql, auth, id, 'networks')
  await sql`delete from networks where id = ${id}`
  return { id, deleted: true }
}

interface MemberRow {
  org_id: string
  org_name: string
  status: 'invited' | 'active'
  can_view: boolean
  owner_org_id: string
  invited_at: Date
  joined_at: Date | null
}

export const presentMember = (row: MemberRow): Static<typeof NetworkMember> => ({
  org_id: row.org_id,
  org_name: row.org_name,
  status: row.status,
  can_view: row.can_view,
  is_owner: row.org_id === row.owner_org_id,
  invited_at: iso(row.invited_at)!,
  joined_at: iso(row.joined_at),
})

async function memberRow(sql: Tx, networkId: string, orgId: string): Promise<MemberRow | undefined> {
  const [row] = await sql<MemberRow[]>`
    select m.org_id, o.name as org_name, m.status, m.can_view, n.owner_org_id, m.invited_at, m.joined_at
      from network_members m join ${orgsAs(sql, 'o')} on o.id = m.org_id join networks n on n.id = m.network_id
     where m.network_id = ${networkId} and m.org_id = ${orgId}`
  return row
}

/** A page of a network's members, for its active members; an invited organization sees only the network. */
export async function listMembers(sql: Sql, auth: Auth, networkId: string, page: PageRequest) {
  const membership = await membershipOf(sql, auth.orgId, networkId)
  if (membership.status !== 'active') throw errors.forbidden('network members: accept the invitation first')
  return listPage<MemberRow & { id: string }>(sql, {
    columns: sql`m.org_id as id, m.org_id, o.name as org_name, m.status, m.can_view, n.owner_org_id, m.invited_at, m.joined_at`,
    from: sql`network_members m`,
    join: sql`join ${orgsAs(sql, 'o')} on o.id = m.org_id join networks n on n.id = m.network_id`,
    where: sql`m.network_id = ${networkId}`,
    page,
    idColumn: 'm.org_id',
  })
}

/** Invitations an organization may send per minute, across its networks. */
export const INVITATIONS_PER_MINUTE = 20

/** Invites an organization (by id); it joins when one of its owners or admins accepts. */
export async function inviteMember(
  ctx: AppContext,
  auth: Auth,
  networkId: string,
  input: { org_id: string; can_view?: boolean },
): Promise<Static<typeof NetworkMember>> {
  const sql = ctx.sql
  await requireNetworkManager(sql, auth, networkId, 'network members')
  const decision = await rateLimiter(ctx).take(`network-invitations:${auth.orgId}`, INVITATIONS_PER_MINUTE)
  if (!decision.allowed) throw rateLimitError(decision, 'rate_limit_exceeded', 'network invitations')
  // an organization that blocked the inviter is not told apart from an unknown one
  const [org] = await sql`
    select o.id from ${orgsAs(sql, 'o')}
     where o.id = ${input.org_id}
       and not exists (select 1 from network_invitation_blocks b where b.org_id = o.id and b.blocked_org_id = ${auth.orgId})`
  if (!org) throw errors.notFound('organization')
  try {
    await sql`insert into network_members (network_id, org_id, status, can_view) values (${networkId}, ${input.org_id}, 'invited', ${input.can_view ?? true})`
  } catch (error) {
    if (isUniqueViolation(error)) throw errors.conflict('org_id: already a member or invited', { reason: 'already_member' })
    throw error
  }
  return presentMember((await memberRow(sql, networkId, input.org_id))!)
}

/** An invited organization's owner or admin joins the network. */
export async function acceptInvitation(sql: Sql, auth: Auth, networkId: string): Promise<Static<typeof Network>> {
  const membership = await membershipOf(sql, auth.orgId, networkId)
  await requireOwnerOrAdmin(sql, auth, 'networks')
  if (membership.status === 'active') throw errors.conflict('network: already a member', { reason: 'already_member' })
  await sql`update network_members set status = 'active', joined_at = now() where network_id = ${networkId} and org_id = ${auth.orgId}`
  return getNetwork(sql, auth.orgId, networkId)
}

/** Sets whether a member (the owner organization included) may browse the directory. */
export async function updateMember(
  sql: Sql,
  auth: Auth,
  networkId: string,
  orgId: string,
  input: { can_view: boolean },
): Promise<Static<typeof NetworkMember>> {
  await requireNetworkManager(sql, auth, networkId, 'network members')
  const rows = await sql`update network_members set can_view = ${input.can_view} where network_id = ${networkId} and org_id = ${orgId} returning org_id`
  if (!rows.length) throw errors.notFound('network member')
  return presentMember((await memberRow(sql, networkId, orgId))!)
}

/**
 * Removes a member: the owner organization removes others; any organization removes itself
 * (leaving, or declining an invitation), and with `block` refuses the owner organization's
 * invitations from then on. The owner cannot leave: it deletes the network.
 */
export async function removeMember(
  sql: Sql,
  auth: Auth,
  networkId: string,
  orgId: string,
  opts: { block?: boolean } = {},
): Promise<{ org_id: string; removed: true }> {
  const membership = await membershipOf(sql, auth.orgId, networkId)
  if (orgId === auth.orgId) {
    if (membership.is_owner) throw errors.conflict('network: the owner organization cannot leave; delete the network instead', { reason: 'owner_cannot_leave' })
    await requireOwnerOrAdmin(sql, auth, 'networks')
  } else {
    if (opts.block) throw errors.validation('block', 'only when the organization removes itself (declines or leaves)')
    await requireNetworkManager(sql, auth, networkId, 'network members')
  }
  return sql.begin(async tx => {
    const rows = await tx`delete from network_members where network_id = ${networkId} and org_id = ${orgId} returning org_id`
    if (!rows.length) throw errors.notFound('network member')
    if (opts.block) {
      await tx`insert into network_invitation_blocks (org_id, blocked_org_id) values (${auth.orgId}, ${membership.owner_org_id}) on conflict do nothing`
    }
    return { org_id: orgId, removed: true as const }
  })
}

/** The organizations whose invitations this one refuses, newest first. */
export async function listInvitationBlocks(sql: Sql, auth: Auth): Promise<{ org_id: string; blocked_at: string }[]> {
  const rows = await sql<{ org_id: string; created_at: Date }[]>`
    select blocked_org_id as org_id, created_at from network_invitation_blocks where org_id = ${auth.orgId} order by created_at desc`
  return rows.map(r => ({ org_id: r.org_id, blocked_at: iso(r.created_at)! }))
}

/** Lifts a block: the organization may invite this one again. Needs an owner or admin. */
export async function removeInvitationBlock(sql: Sql, auth: Auth, orgId: string): Promise<{ org_id: string; unblocked: true }> {
  await requireOwnerOrAdmin(sql, auth, 'network invitation blocks')
  const rows = await sql`delete from network_invitation_blocks where org_id = ${auth.orgId} and blocked_org_id = ${orgId} returning blocked_org_id`
  if (!rows.length) throw errors.notFound('invitation block')
  return { org_id: orgId, unblocked: true }
}
