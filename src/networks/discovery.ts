/**
 * A network's directory: the agents its active members publish, for the members allowed to
 * browse it (can_view; for a connection key this is its only way in). Admitting a discovered
 * agent as a contact is contacts' (src/contacts/admission.ts), which reads the agent here.
 */
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import type { DiscoveredAgent } from './model'
import { type DiscoveredRow, directoryAgentRow, directoryPage } from './queries'
import { presentAgent } from './publishing'
import { membershipOf } from './service'

export const presentDiscovered = (row: DiscoveredRow): Static<typeof DiscoveredAgent> => ({
  ...presentAgent(row),
  last_active_at: iso(row.last_active_at),
  org: { id: row.org_id, name: row.org_name },
})

/** 404 unless the organization is in the network; 403 unless it is active there with can_view. */
async function requireViewer(sql: Tx, auth: Auth, networkId: string) {
  const membership = await membershipOf(sql, auth.orgId, networkId)
  if (membership.status !== 'active') throw errors.forbidden('network: accept the invitation first')
  if (!membership.can_view) throw errors.forbidden('network: this organization may not browse the directory (can_view is off)')
}

/** A page of the directory, newest first; `q` searches address, name and description, `skill` must be among the skills. */
export async function discoverAgents(sql: Sql, auth: Auth, networkId: string, filter: { q?: string; skill?: string }, page: PageRequest) {
  await requireViewer(sql, auth, networkId)
  return directoryPage(sql, networkId, filter, page)
}

/**
 * The agent `agentId` of the network's directory, for an organization allowed to browse it (404
 * unless in the network, 403 unless active there with can_view); undefined if no such agent.
 */
export async function directoryAgent(sql: Tx, auth: Auth, networkId: string, agentId: string) {
  await requireViewer(sql, auth, networkId)
  return directoryAgentRow(sql, networkId, agentId)
}
