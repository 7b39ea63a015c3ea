/**
 * The networks, network_members and network_invitation_blocks tables (networks/ owns them): the
 * row types and every statement, and the directory (a network's members' published agents).
 * published_agents' own statements are in ./published-agents-queries.ts.
 */
import { orgsAs } from '../account/org-queries'
import type { Sql, Tx } from '../db/client'
import { containsPattern } from '../db/like'
import { listPage, type PageRequest } from '../http/pagination'

export interface NetworkRow {
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

export interface MemberRow {
  org_id: string
  org_name: string
  status: 'invited' | 'active'
  can_view: boolean
  owner_org_id: string
  invited_at: Date
  joined_at: Date | null
}

export interface DiscoveredRow {
  id: string
  address: string
  display_name: string
  description: string
  skills: string[]
  accepts_contacts: boolean
  last_active_at: Date | null
  org_id: string
  org_name: string
}

const networkColumns = (sql: Tx) => sql`
  n.id, n.name, n.description, n.owner_org_id, m.status, m.can_view, n.created_at,
  (select count(*)::int from network_members a where a.network_id = n.id and a.status = 'active') as member_count`

/** The organization's membership of a network, with the network's owner. */
export async function membershipRow(sql: Tx, orgId: string, networkId: string): Promise<(Membership & { owner_org_id: string }) | undefined> {
  const [row] = await sql<(Membership & { owner_org_id: string })[]>`
    select m.status, m.can_view, n.owner_org_id, n.owner_org_id = m.org_id as is_owner
      from network_members m join networks n on n.id = m.network_id
     where m.network_id = ${networkId} and m.org_id = ${orgId}`
  return row
}

/** A network as a member (or invited) organization sees it. */
export async function networkFor(sql: Sql, orgId: string, id: string): Promise<NetworkRow | undefined> {
  const [row] = await sql<NetworkRow[]>`
    select ${networkColumns(sql)} from networks n join network_members m on m.network_id = n.id and m.org_id = ${orgId}
     where n.id = ${id}`
  return row
}

/** A page of the organization's networks, newest first; `onlyViewable`: active with can_view only. */
export function networksPage(sql: Sql, orgId: string, onlyViewable: boolean, page: PageRequest) {
  return listPage<NetworkRow>(sql, {
    columns: networkColumns(sql),
    from: sql`networks n join network_members m on m.network_id = n.id and m.org_id = ${orgId}`,
    where: onlyViewable ? sql`m.status = 'active' and m.can_view` : sql`true`,
    page,
    idColumn: 'n.id',
  })
}

/** A new network and its owner organization as its first active member. */
export async function insertNetwork(tx: Tx, id: string, ownerOrgId: string, name: string, description: string): Promise<void> {
  await tx`insert into networks (id, owner_org_id, name, description) values (${id}, ${ownerOrgId}, ${name}, ${description})`
  await tx`insert into network_members (network_id, org_id, status, can_view, joined_at) values (${id}, ${ownerOrgId}, 'active', true, now())`
}

export async function updateNetworkRow(sql: Sql, id: string, input: { name?: string; description?: string }): Promise<void> {
  await sql`
    update networks set name = coalesce(${input.name ?? null}, name), description = coalesce(${input.description ?? null}, description), updated_at = now()
     where id = ${id}`
}

export async function deleteNetworkRow(sql: Sql, id: string): Promise<void> {
  await sql`delete from networks where id = ${id}`
}

const memberColumns = (sql: Tx) => sql`m.org_id, o.name as org_name, m.status, m.can_view, n.owner_org_id, m.invited_at, m.joined_at`

export async function memberRow(sql: Tx, networkId: string, orgId: string): Promise<MemberRow | undefined> {
  const [row] = await sql<MemberRow[]>`
    select ${memberColumns(sql)}
      from network_members m join ${orgsAs(sql, 'o')} on o.id = m.org_id join networks n on n.id = m.network_id
     where m.network_id = ${networkId} and m.org_id = ${orgId}`
  return row
}

export function membersPage(sql: Sql, networkId: string, page: PageRequest) {
  return listPage<MemberRow & { id: string }>(sql, {
    columns: sql`m.org_id as id, ${memberColumns(sql)}`,
    from: sql`network_members m`,
    join: sql`join ${orgsAs(sql, 'o')} on o.id = m.org_id join networks n on n.id = m.network_id`,
    where: sql`m.network_id = ${networkId}`,
    page,
    idColumn: 'm.org_id',
  })
}

/** Whether organization `orgId` exists and does not block invitations from `inviterOrgId`. */
export async function invitable(sql: Sql, orgId: string, inviterOrgId: string): Promise<boolean> {
  const [org] = await sql`
    select o.id from ${orgsAs(sql, 'o')}
     where o.id = ${orgId}
       and not exists (select 1 from network_invitation_blocks b where b.org_id = o.id and b.blocked_org_id = ${inviterOrgId})`
  return !!org
}

export async function insertInvitation(sql: Sql, networkId: string, orgId: string, canView: boolean): Promise<void> {
  await sql`insert into network_members (network_id, org_id, status, can_view) values (${networkId}, ${orgId}, 'invited', ${canView})`
}

export async function activateMember(sql: Sql, networkId: string, orgId: string): Promise<void> {
  await sql`update network_members set status = 'active', joined_at = now() where network_id = ${networkId} and org_id = ${orgId}`
}

/** Sets a member's can_view; whether it is a member. */
export async function setCanView(sql: Sql, networkId: string, orgId: string, canView: boolean): Promise<boolean> {
  const rows = await sql`update network_members set can_view = ${canView} where network_id = ${networkId} and org_id = ${orgId} returning org_id`
  return rows.length > 0
}

/** Removes a member; whether it was one. */
export async function deleteMember(tx: Tx, networkId: string, orgId: string): Promise<boolean> {
  const rows = await tx`delete from network_members where network_id = ${networkId} and org_id = ${orgId} returning org_id`
  return rows.length > 0
}

export async function insertInvitationBlock(tx: Tx, orgId: string, blockedOrgId: string): Promise<void> {
  await tx`insert into network_invitation_blocks (org_id, blocked_org_id) values (${orgId}, ${blockedOrgId}) on conflict do nothing`
}

/** The organizations whose invitations this one refuses, newest first. */
export function invitationBlocks(sql: Sql, orgId: string) {
  return sql<{ org_id: string; created_at: Date }[]>`
    select blocked_org_id as org_id, created_at from network_invitation_blocks where org_id = ${orgId} order by created_at desc`
}

/** Lifts a block; whether there was one. */
export async function deleteInvitationBlock(sql: Sql, orgId: string, blockedOrgId: string): Promise<boolean> {
  const rows = await sql`delete from network_invitation_blocks where org_id = ${orgId} and blocked_org_id = ${blockedOrgId} returning blocked_org_id`
  return rows.length > 0
}

const directory = (sql: Tx, networkId: string) => sql`
  published_agents pa join network_members m on m.org_id = pa.org_id and m.network_id = ${networkId} and m.status = 'active'`

/** A page of the network's directory, newest first; `q` searches address, name and description, `skill` must be among the skills. */
export function directoryPage(sql: Sql, networkId: string, filter: { q?: string; skill?: string }, page: PageRequest) {
  const where = [sql`true`]
  if (filter.q) {
    const like = containsPattern(filter.q)
    where.push(sql`(pa.address ilike ${like} or pa.display_name ilike ${like} or pa.description ilike ${like})`)
  }
  if (filter.skill) where.push(sql`pa.skills @> ${[filter.skill.toLowerCase()]}::text[]`)
  return listPage<DiscoveredRow>(sql, {
    columns: sql`pa.id, pa.address, pa.display_name, pa.description, pa.skills, pa.accepts_contacts, pa.last_active_at, pa.org_id, o.name as org_name`,
    from: directory(sql, networkId),
    join: sql`join ${orgsAs(sql, 'o')} on o.id = pa.org_id`,
    where: where.reduce((all, w) => sql`${all} and ${w}`),
    page,
    idColumn: 'pa.id',
  })
}

/** The agent `agentId` of the network's directory. */
export async function directoryAgentRow(sql: Tx, networkId: string, agentId: string) {
  const [agent] = await sql<{ id: string; address: string; display_name: string; accepts_contacts: boolean }[]>`
    select pa.id, pa.address, pa.display_name, pa.accepts_contacts from ${directory(sql, networkId)} where pa.id = ${agentId}`
  return agent
}
