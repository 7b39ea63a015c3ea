/**
 * The registries and registry_agents tables (registries/ owns them): the row types and every
 * statement, and the page of the built-in registry's agents, read from networks' public agents.
 */
import type { Sql, Tx } from '../db/client'
import { containsPattern } from '../db/like'
import { listPage, type PageRequest } from '../http/pagination'
import { publicAgents } from '../networks/published-agents-queries'

export interface RegistryRow {
  id: string
  name: string
  url: string
  status: 'pending' | 'ok' | 'failed'
  last_error: string | null
  fetched_at: Date | null
  created_at: Date
  agent_count: number
}

/** An agent of a registry, as listed (the built-in registry's from a published agent). */
export interface EntryRow {
  id: string
  name: string
  description: string
  url: string | null
  address: string | null
  skills: string[]
  fetched_at: Date | null
}

/** A cached agent card, as a registry's fetch stores it. */
export interface CachedCard {
  name: string
  description: string
  url: string | null
  skills: string[]
  card: unknown
}

const registryColumns = (sql: Tx) => sql`r.id, r.name, r.url, r.status, r.last_error, r.fetched_at, r.created_at,
  (select count(*)::int from registry_agents a where a.registry_id = r.id) as agent_count`

/** The organization's registries, newest first. */
export function registriesOf(sql: Sql, orgId: string) {
  return sql<RegistryRow[]>`select ${registryColumns(sql)} from registries r where r.org_id = ${orgId} order by r.id desc`
}

export async function registryById(sql: Tx, orgId: string, id: string): Promise<RegistryRow | undefined> {
  const [row] = await sql<RegistryRow[]>`select ${registryColumns(sql)} from registries r where r.org_id = ${orgId} and r.id = ${id}`
  return row
}

export async function countRegistries(tx: Tx, orgId: string): Promise<number> {
  const [count] = await tx<{ n: number }[]>`select count(*)::int as n from registries where org_id = ${orgId}`
  return count!.n
}

export async function insertRegistry(tx: Tx, id: string, orgId: string, name: string, url: string): Promise<void> {
  await tx`insert into registries (id, org_id, name, url) values (${id}, ${orgId}, ${name}, ${url})`
}

export async function deleteRegistryRow(sql: Sql, orgId: string, id: string): Promise<void> {
  await sql`delete from registries where org_id = ${orgId} and id = ${id}`
}

/** A page of a registry's agents (`builtin`: the public agents), newest first; `q` searches name and description, `skill` must be among the skills. */
export function registryAgentsPage(sql: Sql, registry: { builtin: true } | { id: string }, filter: { q?: string; skill?: string }, page: PageRequest) {
  const builtin = 'builtin' in registry
  const name = builtin ? sql`display_name` : sql`name`
  const where = [builtin ? sql`true` : sql`registry_id = ${registry.id}`]
  if (filter.q) where.push(sql`(${name} ilike ${containsPattern(filter.q)} or description ilike ${containsPattern(filter.q)})`)
  if (filter.skill) where.push(sql`skills @> ${[filter.skill.toLowerCase()]}::text[]`)
  return listPage<EntryRow>(sql, {
    columns: builtin
      ? sql`id, display_name as name, description, null as url, address, skills, null::timestamptz as fetched_at`
      : sql`id, name, description, url, null as address, skills, fetched_at`,
    from: builtin ? publicAgents(sql) : sql`registry_agents`,
    where: where.reduce((all, w) => sql`${all} and ${w}`),
    page,
  })
}

/** One cached agent of a registry, with its card. */
export async function registryAgent(sql: Sql, registryId: string, agentId: string): Promise<(EntryRow & { card: Record<string, unknown> }) | undefined> {
  const [row] = await sql<(EntryRow & { card: Record<string, unknown> })[]>`
    select id, name, description, url, null as address, skills, fetched_at, card from registry_agents where registry_id = ${registryId} and id = ${agentId}`
  return row
}

/** A registry's URL, for its fetch. */
export async function registryUrl(sql: Sql, id: string): Promise<{ id: string; url: string } | undefined> {
  const [registry] = await sql<{ id: string; url: string }[]>`select id, url from registries where id = ${id}`
  return registry
}

/** Records a failed fetch; the cached cards stay. */
export async function recordFetchFailure(sql: Sql, id: string, reason: string): Promise<void> {
  await sql`update registries set status = 'failed', last_error = ${reason}, attempted_at = now() where id = ${id}`
}

/**
 * Replaces a registry's cached cards with `cards` fetched at `at`, under the registry's row lock;
 * nothing if the registry is gone.
 */
export async function replaceCards(tx: Tx, id: string, cards: CachedCard[], at: Date, newId: () => string): Promise<void> {
  const [kept] = await tx`select id from registries where id = ${id} for update`
  if (!kept) return
  await tx`delete from registry_agents where registry_id = ${id}`
  for (const c of cards) {
    await tx`
      insert into registry_agents (id, registry_id, name, description, url, skills, card, fetched_at)
      values (${newId()}, ${id}, ${c.name}, ${c.description}, ${c.url}, ${c.skills}, ${tx.json(c.card as never)}, ${at})`
  }
  await tx`update registries set status = 'ok', last_error = null, fetched_at = ${at}, attempted_at = ${at} where id = ${id}`
}

/** Up to `limit` registries last fetched (or tried) more than `hours` ago, the oldest first. */
export async function staleRegistries(sql: Sql, hours: number, limit: number): Promise<string[]> {
  const stale = await sql<{ id: string }[]>`
    select id from registries
     where coalesce(attempted_at, created_at) < now() - make_interval(hours => ${hours})
     order by coalesce(attempted_at, created_at) limit ${limit}`
  return stale.map(r => r.id)
}
