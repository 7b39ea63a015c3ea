/**
 * Which of its addresses an organization publishes, and how: a display name, a description,
 * skills, whether others may admit it as a contact, and its visibility (the members of the
 * organization's networks, or also everyone on this service: the built-in registry and a public
 * A2A agent card). Publishing exposes an address beyond the organization, so it needs an owner
 * or admin.
 */
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { Config } from '../config'
import { normalizeAddress, ownsAddress } from '../connections/service'
import type { Sql } from '../db/client'
import { requireOwnerOrAdmin } from '../account/roles'
import { errors } from '../errors'
import { iso } from '../http/timestamps'
import type { PublishedAgent } from './model'
import { deletePublishedAgent, type PublishedAgentRow, publishedAgentsOf, upsertPublishedAgent } from './published-agents-queries'

export interface PublishInput {
  display_name: string
  description?: string
  skills?: string[]
  accepts_contacts?: boolean
  visibility?: 'networks' | 'public'
}

/** Where the service serves the A2A agent card of a public agent. */
export const agentCardUrl = (config: Config, address: string) => `${config.PUBLIC_URL}/agents/${encodeURIComponent(address)}/.well-known/agent-card.json`

/** What every view of a published agent shows first: who it is, what it offers, whether it takes contacts. */
export const presentAgent = (row: { id: string; address: string; display_name: string; description: string; skills: string[]; accepts_contacts: boolean }) => ({
  id: row.id,
  address: row.address,
  display_name: row.display_name,
  description: row.description,
  skills: row.skills,
  accepts_contacts: row.accepts_contacts,
})

export function presentPublished(config: Config, row: PublishedAgentRow): Static<typeof PublishedAgent> {
  return {
    ...presentAgent(row),
    visibility: row.visibility,
    agent_card_url: row.visibility === 'public' ? agentCardUrl(config, row.address) : null,
    last_active_at: iso(row.last_active_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  }
}

/** Publishes an address of the organization, or replaces how it is published; `created` says which. */
export async function publishAddress(sql: Sql, auth: Auth, rawAddress: string, input: PublishInput): Promise<{ row: PublishedAgentRow; created: boolean }> {
  await requireOwnerOrAdmin(sql, auth, 'published-agents')
  const address = normalizeAddress(rawAddress)
  if (!(await ownsAddress(sql, auth.orgId, address))) {
    throw errors.validation('address', 'must be a managed inbox of this organization or an address at one of its verified domains')
  }
  const skills = [...new Set((input.skills ?? []).map(s => s.toLowerCase()))]
  return upsertPublishedAgent(sql, auth.orgId, address, {
    display_name: input.display_name,
    description: input.description ?? '',
    skills,
    accepts_contacts: input.accepts_contacts ?? true,
    visibility: input.visibility ?? 'networks',
  })
}

export async function listPublished(sql: Sql, orgId: string): Promise<PublishedAgentRow[]> {
  return publishedAgentsOf(sql, orgId)
}

/** Withdraws an address: it leaves every directory; contacts admitted through it lose their send grant. */
export async function unpublishAddress(sql: Sql, auth: Auth, rawAddress: string): Promise<{ address: string; unpublished: true }> {
  await requireOwnerOrAdmin(sql, auth, 'published-agents')
  const address = normalizeAddress(rawAddress)
  if (!(await deletePublishedAgent(sql, auth.orgId, address))) throw errors.notFound('published agent')
  return { address, unpublished: true }
}
