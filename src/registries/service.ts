/**
 * Registries of agents: the built-in one (the agents published on this service with visibility
 * public, read live) and the registries an owner or admin adds by URL (their cards fetched by
 * the registries.fetch job and read from the cache). Registries added by an organization are
 * its own: another organization's are 404.
 */
import { randomUUIDv7 } from 'bun'
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { Config } from '../config'
import type { Sql, Tx } from '../db/client'
import { isUniqueViolation } from '../db/errors'
import { requireOwnerOrAdmin } from '../account/roles'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { enqueue } from '../jobs/queue'
import type { Resolver } from '../dns/resolver'
import { checkWebhookUrl } from '../egress/url-safety'
import { countPublicAgents, publicAgentByAddress, publicAgentById } from '../networks/published-agents-queries'
import { agentCard } from './cards'
import {
  countRegistries,
  deleteRegistryRow,
  type EntryRow,
  insertRegistry,
  type RegistryRow,
  registriesOf,
  registryAgent,
  registryAgentsPage,
  registryById,
} from './queries'
import { documentUrl, fetchDedupeKey, REGISTRY_FETCH_KIND } from './fetch.job'
import { BUILTIN_REGISTRY_ID, type Registry, type RegistryAgent, type RegistryAgentDetail } from './model'

export const MAX_REGISTRIES_PER_ORG = 20

const presentRegistry = (r: RegistryRow): Static<typeof Registry> => ({
  id: r.id,
  kind: 'a2a',
  name: r.name,
  url: r.url,
  status: r.status,
  last_error: r.last_error,
  fetched_at: iso(r.fetched_at),
  agent_count: r.agent_count,
  created_at: iso(r.created_at),
})

/** The built-in registry first, then the organization's, newest first. */
export async function listRegistries(sql: Sql, auth: Auth): Promise<Static<typeof Registry>[]> {
  const builtin = await countPublicAgents(sql)
  const rows = await registriesOf(sql, auth.orgId)
  return [
    {
      id: BUILTIN_REGISTRY_ID,
      kind: 'builtin',
      name: 'Agents on this service',
      url: null,
      status: 'ok',
      last_error: null,
      fetched_at: null,
      agent_count: builtin,
      created_at: null,
    },
    ...rows.map(presentRegistry),
  ]
}

async function registryRow(sql: Tx, orgId: string, id: string): Promise<RegistryRow> {
  const row = await registryById(sql, orgId, id)
  if (!row) throw errors.notFound('registry')
  return row
}

const isUuid = (id: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)

/** 404 unless `id` is the built-in registry or one of the organization's. */
async function requireRegistry(sql: Tx, orgId: string, id: string): Promise<'builtin' | RegistryRow> {
  if (id === BUILTIN_REGISTRY_ID) return 'builtin'
  if (!isUuid(id)) throw errors.notFound('registry')
  return registryRow(sql, orgId, id)
}

export async function getRegistry(sql: Sql, auth: Auth, id: string): Promise<Static<typeof Registry>> {
  const found = await requireRegistry(sql, auth.orgId, id)
  if (found === 'builtin') return (await listRegistries(sql, auth))[0]!
  return presentRegistry(found)
}

/**
 * Adds a registry by URL (owner or admin): the URL must pass the SSRF guard now (a private or
 * loopback address is a validation_error), and the job that fetches it is written with it.
 */
export async function addRegistry(
  sql: Sql,
  resolver: Resolver,
  allowLoopback: boolean,
  auth: Auth,
  input: { name: string; url: string },
): Promise<Static<typeof Registry>> {
  await requireOwnerOrAdmin(sql, auth, 'registries')
  await checkWebhookUrl(documentUrl(safeUrl(input.url)), resolver, allowLoopback)
  const id = randomUUIDv7()
  try {
    await sql.begin(async tx => {
      if ((await countRegistries(tx, auth.orgId)) >= MAX_REGISTRIES_PER_ORG)
        throw errors.conflict(`registries: at most ${MAX_REGISTRIES_PER_ORG} per organization`, { reason: 'limit_reached' })
      await insertRegistry(tx, id, auth.orgId, input.name, input.url)
      await enqueue(tx, REGISTRY_FETCH_KIND, { registry_id: id }, { dedupeKey: fetchDedupeKey(id) })
    })
  } catch (error) {
    if (isUniqueViolation(error)) throw errors.conflict('url: this registry is already added', { reason: 'registry_exists' })
    throw error
  }
  return presentRegistry(await registryRow(sql, auth.orgId, id))
}

function safeUrl(raw: string): string {
  try {
    return new URL(raw).toString()
  } catch {
    throw errors.validation('url', 'must be an absolute URL')
  }
}

/** Asks for a new fetch of the registry's cards (owner or admin). */
export async function refreshRegistry(sql: Sql, auth: Auth, id: string): Promise<Static<typeof Registry>> {
  await requireOwnerOrAdmin(sql, auth, 'registries')
  const found = await requireRegistry(sql, auth.orgId, id)
  if (found === 'builtin') throw errors.conflict('registry: the built-in registry is always current', { reason: 'builtin_registry' })
  await enqueue(sql, REGISTRY_FETCH_KIND, { registry_id: id }, { dedupeKey: fetchDedupeKey(id) })
  return presentRegistry(found)
}

export async function deleteRegistry(sql: Sql, auth: Auth, id: string): Promise<{ id: string; deleted: true }> {
  await requireOwnerOrAdmin(sql, auth, 'registries')
  const found = await requireRegistry(sql, auth.orgId, id)
  if (found === 'builtin') throw errors.conflict('registry: the built-in registry cannot be removed', { reason: 'builtin_registry' })
  await deleteRegistryRow(sql, auth.orgId, id)
  return { id, deleted: true }
}

const presentEntry =
  (registryId: string) =>
  (r: EntryRow): Static<typeof RegistryAgent> => ({
    id: r.id,
    registry_id: registryId,
    name: r.name,
    description: r.description,
    url: r.url,
    address: r.address,
    skills: r.skills,
    fetched_at: iso(r.fetched_at),
  })

/** A page of a registry's agents, newest first; `q` searches name and description, `skill` must be among the skills. */
export async function listRegistryAgents(sql: Sql, auth: Auth, id: string, filter: { q?: string; skill?: string }, page: PageRequest) {
  const found = await requireRegistry(sql, auth.orgId, id)
  const builtin = found === 'builtin'
  const result = await registryAgentsPage(sql, builtin ? { builtin } : { id }, filter, page)
  return { ...result, present: presentEntry(builtin ? BUILTIN_REGISTRY_ID : id) }
}

/** One agent of a registry with its card: ours, built from the published agent, or the cached (untrusted) one. */
export async function getRegistryAgent(sql: Sql, config: Config, auth: Auth, id: string, agentId: string): Promise<Static<typeof RegistryAgentDetail>> {
  const found = await requireRegistry(sql, auth.orgId, id)
  if (!isUuid(agentId)) throw errors.notFound('agent')
  if (found === 'builtin') {
    const agent = await publicAgentById(sql, agentId)
    if (!agent) throw errors.notFound('agent')
    const card = agentCard(config, agent)
    return {
      ...presentEntry(BUILTIN_REGISTRY_ID)({
        id: agent.id,
        name: agent.display_name,
        description: agent.description,
        url: null,
        address: agent.address,
        skills: agent.skills,
        fetched_at: null,
      }),
      card,
    }
  }
  const row = await registryAgent(sql, id, agentId)
  if (!row) throw errors.notFound('agent')
  return { ...presentEntry(id)(row), card: row.card }
}

/** The public agent card of an address, or null when it is not published publicly. */
export async function publicAgentCard(sql: Sql, config: Config, address: string) {
  const agent = await publicAgentByAddress(sql, address.trim().toLowerCase())
  return agent ? agentCard(config, agent) : null
}
