/**
 * A network's directory: the agents its active members publish, for the members allowed to
 * browse it (can_view; for a connection key this is its only way in). Admitting a discovered
 * agent as a contact is contacts' (src/contacts/admission.ts), which reads the agent here.
 */
import { orgsAs } from '../account/orgs'
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import type { DiscoveredAgent } from './model'
import { membershipOf } from './service'
import { containsPattern } from '../db/like'

interface DiscoveredRow {
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

export const presentDiscovered = (row: DiscoveredRow): Static<typeof DiscoveredAgent> => ({
  id: row.id,
  address: row.address,
  display_name: row.display_name,
  description: row.description,
  skills: row.skills,
  accepts_contacts: row.accepts_contacts,
  last_active_at: iso(row.last_active_at),
  org: { id: row.org_id, name: row.org_name },
})

/** 404 unless the organization is in the network; 403 unless it is active there with can_view. */
async function requireViewer(sql: Tx, auth: Auth, networkId: string) {
  const membership = await membershipOf(sql, auth.orgId, networkId)
  if (membership.status !== 'active') throw errors.forbidden('network: accept the invitation first')
  if (!membership.can_view) throw errors.forbidden('network: this organization may not browse the directory (can_view is off)')
}

const directory = (sql: Tx, networkId: string) => sql`
  published_agents pa join network_members m on m.org_id = pa.org_id and m.network_id = ${networkId} and m.status = 'active'`

/** A page of the directory, newest first; `q` searches address, name and description, `skill` must be among the skills. */
export async function discoverAgents(sql: Sql, auth: Auth, networkId: string, filter: { q?: string; skill?: string }, page: PageRequest) {
  await requireViewer(sql, auth, networkId)
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

/**
 * The agent `agentId` of the network's directory, for an organization allowed to browse it (404
 * unless in the network, 403 unless active there with can_view); undefined if no such agent.
 */
export async function directoryAgent(sql: Tx, auth: Auth, networkId: string, agentId: string) {
  await requireViewer(sql, auth, networkId)
  const [agent] = await sql<{ id: string; address: string; display_name: string; accepts_contacts: boolean }[]>`
    select pa.id, pa.address, pa.display_name, pa.accepts_contacts from ${directory(sql, networkId)} where pa.id = ${agentId}`
  return agent
}
