/**
 * The published_agents table (networks/ owns it: publishing writes it, and registries, a feature
 * above networks, shows the public ones as the built-in registry). Its row type, and the
 * statements other features call (registries; contacts for a contact's send grant).
 */
import type { Tx } from '../db/client'

export interface PublishedAgentRow {
  id: string
  org_id: string
  address: string
  display_name: string
  description: string
  skills: string[]
  accepts_contacts: boolean
  visibility: 'networks' | 'public'
  last_active_at: Date | null
  created_at: Date
  updated_at: Date
}

/** The publicly published agents, as a relation (`from ${publicAgents(sql)}`); the built-in registry lists them. */
export const publicAgents = (sql: Tx) => sql`(select * from published_agents where visibility = 'public') as public_agents`

/** How many agents are published publicly. */
export async function countPublicAgents(sql: Tx): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from published_agents where visibility = 'public'`
  return row!.n
}

/** A publicly published agent by id. */
export async function publicAgentById(sql: Tx, id: string): Promise<PublishedAgentRow | undefined> {
  const [agent] = await sql<PublishedAgentRow[]>`select * from published_agents where id = ${id} and visibility = 'public'`
  return agent
}

/** The publicly published agent of an address (already lowercased). */
export async function publicAgentByAddress(sql: Tx, address: string): Promise<PublishedAgentRow | undefined> {
  const [agent] = await sql<PublishedAgentRow[]>`select * from published_agents where address = ${address} and visibility = 'public' limit 1`
  return agent
}

/**
 * Whether the agent a contact was admitted from still consents, for the contact row aliased `c`
 * (its network_id, agent_id, address, org_id): the agent is still published with accepts_contacts,
 * and both organizations are still active members of the network (src/contacts/grants.ts).
 */
export const agentStillConsents = (sql: Tx) => sql`
  exists (
    select 1 from published_agents pa
      join network_members theirs on theirs.network_id = c.network_id and theirs.org_id = pa.org_id and theirs.status = 'active'
      join network_members ours on ours.network_id = c.network_id and ours.org_id = c.org_id and ours.status = 'active'
     where pa.id = c.agent_id and pa.address = c.address and pa.accepts_contacts)`
