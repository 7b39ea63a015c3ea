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
import type { PageRequest } from '../http/pagination'
import type { Network, NetworkMember } from './model'
import {
  activateMember,
  deleteInvitationBlock,
  deleteMember,
  deleteNetworkRow,
  insertInvitation,
  insertInvitationBlock,
  insertNetwork,
  invitable,
  invitationBlocks,
  type MemberRow,
  type Membership,
  membersPage,
  memberRow,
  membershipRow,
  type NetworkRow,
  networkFor,
  networksPage,
  setCanView,
  updateNetworkRow,
} from './queries'

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
  const row = await membershipRow(sql, orgId, networkId)
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
  const row = await networkFor(sql, orgId, id)
  if (!row) throw errors.notFound('network')
  return presentFor(orgId)(row)
}

/**
 * A page of the networks the organization belongs to or is invited to, newest first. A
 * connection key sees only those it may browse (active, can_view).
 */
export async function listNetworks(sql: Sql, auth: Auth, page: PageRequest) {
  return networksPage(sql, auth.orgId, auth.method === 'connection', page)
}

export async function createNetwork(sql: Sql, auth: Auth, input: { name: string; description?: string }): Promise<Static<typeof Network>> {
  await requireOwnerOrAdmin(sql, auth, 'networks')
  const id = randomUUIDv7()
  await sql.begin(tx => insertNetwork(tx, id, auth.orgId, input.name, input.description ?? ''))
  return getNetwork(sql, auth.orgId, id)
}

export async function updateNetwork(sql: Sql, auth: Auth, id: string, input: { name?: string; description?: string }): Promise<Static<typeof Network>> {
  await requireNetworkManager(sql, auth, id, 'networks')
  await updateNetworkRow(sql, id, input)
  return getNetwork(sql, auth.orgId, id)
}

/** Deletes the network: its memberships go, contacts admitted through it lose their send grant. */
export async function deleteNetwork(sql: Sql, auth: Auth, id: string): Promise<{ id: string; deleted: true }> {
  await requireNetworkManager(sql, auth, id, 'networks')
  await deleteNetworkRow(sql, id)
  return { id, deleted: true }
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

/** A page of a network's members, for its active members; an invited organization sees only the network. */
export async function listMembers(sql: Sql, auth: Auth, networkId: string, page: PageRequest) {
  const membership = await membershipOf(sql, auth.orgId, networkId)
  if (membership.status !== 'active') throw errors.forbidden('network members: accept the invitation first')
  return membersPage(sql, networkId, page)
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
  if (!(await invitable(sql, input.org_id, auth.orgId))) throw errors.notFound('organization')
  try {
    await insertInvitation(sql, networkId, input.org_id, input.can_view ?? true)
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
  await activateMember(sql, networkId, auth.orgId)
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
  if (!(await setCanView(sql, networkId, orgId, input.can_view))) throw errors.notFound('network member')
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
    if (!(await deleteMember(tx, networkId, orgId))) throw errors.notFound('network member')
    if (opts.block) {
      await insertInvitationBlock(tx, auth.orgId, membership.owner_org_id)
    }
    return { org_id: orgId, removed: true as const }
  })
}

/** The organizations whose invitations this one refuses, newest first. */
export async function listInvitationBlocks(sql: Sql, auth: Auth): Promise<{ org_id: string; blocked_at: string }[]> {
  const rows = await invitationBlocks(sql, auth.orgId)
  return rows.map(r => ({ org_id: r.org_id, blocked_at: iso(r.created_at)! }))
}

/** Lifts a block: the organization may invite this one again. Needs an owner or admin. */
export async function removeInvitationBlock(sql: Sql, auth: Auth, orgId: string): Promise<{ org_id: string; unblocked: true }> {
  await requireOwnerOrAdmin(sql, auth, 'network invitation blocks')
  if (!(await deleteInvitationBlock(sql, auth.orgId, orgId))) throw errors.notFound('invitation block')
  return { org_id: orgId, unblocked: true }
}
