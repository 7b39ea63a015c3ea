/**
 * Contacts: per organization and owning address (one of the organization's addresses), the
 * addresses it corresponds with, with a name and tags of the organization's choosing and
 * counters kept by the mail store (./counters.ts). A new contact starts from the mail already
 * stored between the two addresses. Contacts are managed with the organization's credentials;
 * a connection key only admits network agents as contacts of its own address
 * (src/networks/discovery.ts).
 */
import { storedMailCounts } from '../mail/email-queries'
import { randomUUIDv7 } from 'bun'
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import { normalizeAddress, ownsAddress } from '../connections/service'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { grantState, type GrantState } from './grants'
import type { Contact } from './model'
import { containsPattern } from '../db/like'

export interface ContactRow {
  id: string
  owner_address: string
  address: string
  name: string | null
  tags: string[]
  source: 'manual' | 'network'
  network_id: string | null
  agent_id: string | null
  send_grant: GrantState
  first_seen_at: Date | null
  last_contacted_at: Date | null
  messages_received: string
  messages_sent: string
  created_at: Date
  updated_at: Date
}

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

const columns = (sql: Tx) => sql`
  c.id, c.owner_address, c.address, c.name, c.tags, c.source, c.network_id, c.agent_id, ${grantState(sql)} as send_grant,
  c.first_seen_at, c.last_contacted_at, c.messages_received, c.messages_sent, c.created_at, c.updated_at`

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
  const [row] = await sql<ContactRow[]>`select ${columns(sql)} from contacts c where c.org_id = ${orgId} and c.id = ${id}`
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
    const [inserted] = await tx<{ id: string }[]>`
      with mail as (${storedMailCounts(tx, orgId, owner, address)})
      insert into contacts (id, org_id, owner_address, address, name, tags, source, network_id, agent_id, grant_recorded_at,
                            first_seen_at, last_contacted_at, messages_received, messages_sent)
      select ${randomUUIDv7()}, ${orgId}, ${owner}, ${address}, ${input.name ?? a?.displayName ?? null}, ${tags ?? []}, ${a ? 'network' : 'manual'},
             ${a?.networkId ?? null}, ${a?.agentId ?? null}, ${a ? tx`now()` : null},
             mail.first_seen_at, mail.last_contacted_at, mail.received, mail.sent
        from mail
      on conflict (org_id, owner_address, address) do nothing
      returning id`
    if (inserted) return { row: await contactById(tx, orgId, inserted.id), created: true }
    if (!opts.upsert) throw errors.conflict(`address: ${address} is already a contact of ${owner}`, { reason: 'contact_exists' })
    const [updated] = await tx<{ id: string }[]>`
      update contacts set
        name = ${input.name === undefined ? tx`name` : input.name},
        tags = ${tags === null ? tx`tags` : tags},
        ${a ? tx`source = 'network', network_id = ${a.networkId}, agent_id = ${a.agentId}, grant_recorded_at = now(),` : tx``}
        updated_at = now()
      where org_id = ${orgId} and owner_address = ${owner} and address = ${address}
      returning id`
    return { row: await contactById(tx, orgId, updated!.id), created: false }
  })
}

export interface ContactFilter {
  owner_address?: string
  q?: string
  tag?: string
}

/** A page of contacts, newest first; `q` searches the address and the name, `tag` must be among the tags. */
export async function listContacts(sql: Sql, auth: Auth, filter: ContactFilter, page: PageRequest) {
  const where = [sql`c.org_id = ${auth.orgId}`]
  // a connection key sees the contacts of its bound address only; the filter narrows within it
  if (auth.boundAddress) where.push(sql`c.owner_address = ${normalizeAddress(auth.boundAddress)}`)
  if (filter.owner_address) where.push(sql`c.owner_address = ${normalizeAddress(filter.owner_address)}`)
  if (filter.q) where.push(sql`(c.address ilike ${containsPattern(filter.q)} or c.name ilike ${containsPattern(filter.q)})`)
  if (filter.tag) where.push(sql`c.tags @> ${[filter.tag]}::text[]`)
  return listPage<ContactRow>(sql, {
    columns: columns(sql),
    from: sql`contacts c`,
    where: where.reduce((all, w) => sql`${all} and ${w}`),
    page,
    idColumn: 'c.id',
  })
}

export async function updateContact(sql: Sql, auth: Auth, id: string, changes: ContactChanges): Promise<ContactRow> {
  const tags = changes.tags ? [...new Set(changes.tags)] : null
  const rows = await sql`
    update contacts set
      name = ${changes.name === undefined ? sql`name` : changes.name},
      tags = ${tags === null ? sql`tags` : tags},
      updated_at = now()
    where org_id = ${auth.orgId} and id = ${id}
    returning id`
  if (!rows.length) throw errors.notFound('contact')
  return contactById(sql, auth.orgId, id)
}

/** Deletes a contact, and with it any send grant it held. */
export async function deleteContact(sql: Sql, auth: Auth, id: string): Promise<{ id: string; deleted: true }> {
  const rows = await sql`delete from contacts where org_id = ${auth.orgId} and id = ${id} returning id`
  if (!rows.length) throw errors.notFound('contact')
  return { id, deleted: true }
}
