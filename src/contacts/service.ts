/**
 * Contacts: per organization and owning address (one of the organization's addresses), the
 * addresses it corresponds with, with a name and tags of the organization's choosing and
 * counters kept by the mail store (./counters.ts). A new contact starts from the mail already
 * stored between the two addresses. Contacts are managed with the organization's credentials;
 * a connection key only admits network agents as contacts of its own address
 * (src/networks/discovery.ts).
 */
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import { normalizeAddress, ownsAddress } from '../connections/service'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import type { Contact } from './model'
import { type ContactRow, contactById as findContact, contactsPage, deleteContactById, insertContact, updateContactById, updateContactOf } from './queries'

export interface ContactInput {
  owner_address: string
  address: string
  name?: string | null
  tags?: string[]
}

export interface ContactChanges {
  name?: string | null
  tags?: string[]
}

/** What a network admission adds to a contact: where it came from, and the send grant it records. */
export interface Admission {
  networkId: string
  agentId: string
  /** the name of a new contact unless one is given: the agent's display name */
  displayName: string
}

export function presentContact(row: ContactRow): Static<typeof Contact> {
  return {
    id: row.id,
    owner_address: row.owner_address,
    address: row.address,
    name: row.name,
    tags: row.tags,
    source: row.source,
    network_id: row.network_id,
    agent_id: row.agent_id,
    send_grant: row.send_grant,
    first_seen_at: iso(row.first_seen_at),
    last_contacted_at: iso(row.last_contacted_at),
    messages_received: Number(row.messages_received),
    messages_sent: Number(row.messages_sent),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  }
}

/** The owning and the contact address, checked: the owner must be the organization's. */
async function addressesOf(sql: Tx, orgId: string, input: { owner_address: string; address: string }): Promise<{ owner: string; address: string }> {
  const owner = normalizeAddress(input.owner_address)
  const address = normalizeAddress(input.address)
  if (!(await ownsAddress(sql, orgId, owner))) {
    throw errors.validation('owner_address', 'must be a managed inbox of this organization or an address at one of its verified domains')
  }
  return { owner, address }
}

async function contactById(sql: Tx, orgId: string, id: string): Promise<ContactRow> {
  const row = await findContact(sql, orgId, id)
  if (!row) throw errors.notFound('contact')
  return row
}

/** One contact; a connection key reads only the contacts of its bound address (another is not_found). */
export async function getContact(sql: Sql, auth: Auth, id: string): Promise<ContactRow> {
  const row = await contactById(sql, auth.orgId, id)
  if (auth.boundAddress && row.owner_address !== normalizeAddress(auth.boundAddress)) throw errors.notFound('contact')
  return row
}

/**
 * Creates the contact or, with `upsert`, updates the one the two addresses already have (409
 * conflict otherwise). A network admission also records where it came from and the send grant.
 */
export async function saveContact(
  sql: Sql,
  orgId: string,
  input: ContactInput,
  opts: { upsert: boolean; admission?: Admission },
): Promise<{ row: ContactRow; created: boolean }> {
  const { owner, address } = await addressesOf(sql, orgId, input)
  const tags = input.tags ? [...new Set(input.tags)] : null
  const a = opts.admission
  return sql.begin(async tx => {
    const admission = a && { networkId: a.networkId, agentId: a.agentId }
    const inserted = await insertContact(tx, orgId, { owner, address, name: input.name ?? a?.displayName ?? null, tags: tags ?? [] }, admission)
    if (inserted) return { row: await contactById(tx, orgId, inserted), created: true }
    if (!opts.upsert) throw errors.conflict(`address: ${address} is already a contact of ${owner}`, { reason: 'contact_exists' })
    const updated = await updateContactOf(tx, orgId, { owner, address, name: input.name, tags }, admission)
    return { row: await contactById(tx, orgId, updated), created: false }
  })
}

export interface ContactFilter {
  owner_address?: string
  q?: string
  tag?: string
}

/** A page of contacts, newest first; `q` searches the address and the name, `tag` must be among the tags. */
export async function listContacts(sql: Sql, auth: Auth, filter: ContactFilter, page: PageRequest) {
  return contactsPage(
    sql,
    {
      orgId: auth.orgId,
      // a connection key sees the contacts of its bound address only; the filter narrows within it
      boundAddress: auth.boundAddress ? normalizeAddress(auth.boundAddress) : undefined,
      ownerAddress: filter.owner_address ? normalizeAddress(filter.owner_address) : undefined,
      q: filter.q,
      tag: filter.tag,
    },
    page,
  )
}

export async function updateContact(sql: Sql, auth: Auth, id: string, changes: ContactChanges): Promise<ContactRow> {
  const tags = changes.tags ? [...new Set(changes.tags)] : null
  if (!(await updateContactById(sql, auth.orgId, id, changes.name, tags))) throw errors.notFound('contact')
  return contactById(sql, auth.orgId, id)
}

/** Deletes a contact, and with it any send grant it held. */
export async function deleteContact(sql: Sql, auth: Auth, id: string): Promise<{ id: string; deleted: true }> {
  if (!(await deleteContactById(sql, auth.orgId, id))) throw errors.notFound('contact')
  return { id, deleted: true }
}
