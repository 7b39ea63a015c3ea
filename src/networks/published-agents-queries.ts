/**
 * The published_agents table (networks/ owns it: publishing writes it, and registries, a feature
 * above networks, shows the public ones as the built-in registry). Its row type, and the
 * statements on it: publishing's, the store's activity update, and those other features call
 * (registries; contacts for a contact's send grant).
 */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'

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

/** What publishing an address writes. */
export interface PublishFields {
  display_name: string
  description: string
  skills: string[]
  accepts_contacts: boolean
  visibility: 'networks' | 'public'
}

/** Publishes an address, or replaces how it is published; `created` says which. */
export async function upsertPublishedAgent(sql: Sql, orgId: string, address: string, f: PublishFields): Promise<{ row: PublishedAgentRow; created: boolean }> {
  const [row] = await sql<(PublishedAgentRow & { created: boolean })[]>`
    insert into published_agents (id, org_id, address, display_name, description, skills, accepts_contacts, visibility)
    values (${randomUUIDv7()}, ${orgId}, ${address}, ${f.display_name}, ${f.description}, ${f.skills},
            ${f.accepts_contacts}, ${f.visibility})
    on conflict (org_id, address) do update set
      display_name = excluded.display_name, description = excluded.description, skills = excluded.skills,
      accepts_contacts = excluded.accepts_contacts, visibility = excluded.visibility, updated_at = now()
    returning *, (xmax = 0) as created`
  const { created, ...published } = row!
  return { row: published, created }
}

export function publishedAgentsOf(sql: Sql, orgId: string) {
  return sql<PublishedAgentRow[]>`select * from published_agents where org_id = ${orgId} order by address`
}

/** Withdraws an address; whether it was published. */
export async function deletePublishedAgent(sql: Sql, orgId: string, address: string): Promise<boolean> {
  const rows = await sql`delete from published_agents where org_id = ${orgId} and address = ${address} returning id`
  return rows.length > 0
}

/** An `agent_activity as (update ...)` common table expression: the senders' agents were active at `at`. */
export function agentActivityUpdate(tx: Tx, orgId: string, senders: string[], at: Date) {
  return tx`agent_activity as (
    update published_agents set last_active_at = greatest(coalesce(last_active_at, ${at}), ${at})
     where org_id = ${orgId} and address = any(${senders}))`
}
