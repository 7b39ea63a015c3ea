/**
 * The admission of an agent discovered in a network's directory as a contact. A connection key
 * admits only for its own bound address ("recipient-bound network contact admission"); the
 * admission records the send grant that the reply-only gate honours (./grants.ts). It lives in
 * contacts, which stand on networks, so that the grant can read the network's consent.
 */
import type { Auth } from '../auth/principal'
import { normalizeAddress } from '../connections/service'
import type { Sql } from '../db/client'
import { errors } from '../errors'
import { directoryAgent } from '../networks/discovery'
import type { ContactRow } from './queries'
import { saveContact } from './service'

/**
 * Admits a discovered agent as a contact of `owner_address`: a connection key only of its own
 * address (403 otherwise), other credentials of any address of the organization. The agent must
 * accept contacts (409 otherwise). Returns the contact, and whether it is new.
 */
export async function admitAgent(
  sql: Sql,
  auth: Auth,
  networkId: string,
  agentId: string,
  input: { owner_address: string; name?: string | null; tags?: string[] },
): Promise<{ row: ContactRow; created: boolean }> {
  if (auth.method === 'connection' && normalizeAddress(input.owner_address) !== auth.boundAddress) {
    throw errors.forbidden(`owner_address: a connection key admits contacts only for its own address ${auth.boundAddress}`)
  }
  const agent = await directoryAgent(sql, auth, networkId, agentId)
  if (!agent) throw errors.notFound('agent')
  if (!agent.accepts_contacts) throw errors.conflict(`agent: ${agent.address} does not accept contacts`, { reason: 'not_accepting_contacts' })
  return saveContact(
    sql,
    auth.orgId,
    { owner_address: input.owner_address, address: agent.address, name: input.name, tags: input.tags },
    { upsert: true, admission: { networkId, agentId: agent.id, displayName: agent.display_name } },
  )
}
