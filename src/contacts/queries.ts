/**
 * The contacts table (contacts/ owns it): its row type and every statement on it. A contact's
 * send grant is computed in the statement that reads it, from the consent of the agent it was
 * admitted from (networks' agentStillConsents, ./grants.ts).
 */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import { containsPattern } from '../db/like'
import { listPage, type PageRequest } from '../http/pagination'
import { storedMailCounts } from '../mail/email-queries'
import { agentStillConsents } from '../networks/published-agents-queries'

export type GrantState = 'none' | 'granted' | 'denied'

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

/** What a network admission records on a contact: where it came from (and the grant, now). */
export interface AdmissionRecord {
  networkId: string
  agentId: string
}

/** The grant state of the contact row aliased `c`, as a SQL expression. */
const grantState = (sql: Tx) => sql`
  case when c.grant_recorded_at is null then 'none'
       when ${agentStillConsents(sql)} then 'granted'
       else 'denied' end`

const columns = (sql: Tx) => sql`
  c.id, c.owner_address, c.address, c.name, c.tags, c.source, c.network_id, c.agent_id, ${grantState(sql)} as send_grant,
  c.first_seen_at, c.last_contacted_at, c.messages_received, c.messages_sent, c.created_at, c.updated_at`

export async function contactById(sql: Tx, orgId: string, id: string): Promise<ContactRow | undefined> {
  const [row] = await sql<ContactRow[]>`select ${columns(sql)} from contacts c where c.org_id = ${orgId} and c.id = ${id}`
  return row
}

/**
 * Inserts the contact of `owner` for `address`, its counters taken from the mail already stored
 * between them; its id, or undefined if the two addresses already have one.
 */
export async function insertContact(
  tx: Tx,
  orgId: string,
  c: { owner: string; address: string; name: string | null; tags: string[] },
  admission: AdmissionRecord | undefined,
): Promise<string | undefined> {
  const [inserted] = await tx<{ id: string }[]>`
    with mail as (${storedMailCounts(tx, orgId, c.owner, c.address)})
    insert into contacts (id, org_id, owner_address, address, name, tags, source, network_id, agent_id, grant_recorded_at,
                          first_seen_at, last_contacted_at, messages_received, messages_sent)
    select ${randomUUIDv7()}, ${orgId}, ${c.owner}, ${c.address}, ${c.name}, ${c.tags}, ${admission ? 'network' : 'manual'},
           ${admission?.networkId ?? null}, ${admission?.agentId ?? null}, ${admission ? tx`now()` : null},
           mail.first_seen_at, mail.last_contacted_at, mail.received, mail.sent
      from mail
    on conflict (org_id, owner_address, address) do nothing
    returning id`
  return inserted?.id
}

/** Updates the contact of `owner` for `address` (undefined: keep); an admission records its network and grant. Its id. */
export async function updateContactOf(
  tx: Tx,
  orgId: string,
  c: { owner: string; address: string; name: string | null | undefined; tags: string[] | null },
  admission: AdmissionRecord | undefined,
): Promise<string> {
  const [updated] = await tx<{ id: string }[]>`
    update contacts set
      name = ${c.name === undefined ? tx`name` : c.name},
      tags = ${c.tags === null ? tx`tags` : c.tags},
      ${admission ? tx`source = 'network', network_id = ${admission.networkId}, agent_id = ${admission.agentId}, grant_recorded_at = now(),` : tx``}
      updated_at = now()
    where org_id = ${orgId} and owner_address = ${c.owner} and address = ${c.address}
    returning id`
  return updated!.id
}

/** The filters of a page of contacts: addresses lowercased, `q` raw. */
export interface ContactWhere {
  orgId: string
  boundAddress?: string
  ownerAddress?: string
  q?: string
  tag?: string
}

/** A page of contacts, newest first; `q` searches the address and the name, `tag` must be among the tags. */
export function contactsPage(sql: Sql, filter: ContactWhere, page: PageRequest) {
  const where = [sql`c.org_id = ${filter.orgId}`]
  if (filter.boundAddress) where.push(sql`c.owner_address = ${filter.boundAddress}`)
  if (filter.ownerAddress) where.push(sql`c.owner_address = ${filter.ownerAddress}`)
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

/** Changes a contact's name and tags (undefined/null: keep); whether the organization has it. */
export async function updateContactById(sql: Sql, orgId: string, id: string, name: string | null | undefined, tags: string[] | null): Promise<boolean> {
  const rows = await sql`
    update contacts set
      name = ${name === undefined ? sql`name` : name},
      tags = ${tags === null ? sql`tags` : tags},
      updated_at = now()
    where org_id = ${orgId} and id = ${id}
    returning id`
  return rows.length > 0
}

/** Deletes a contact; whether the organization had it. */
export async function deleteContactById(sql: Sql, orgId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from contacts where org_id = ${orgId} and id = ${id} returning id`
  return rows.length > 0
}

/** The grant state of each contact of `ownerAddress` among `addresses`. */
export function contactGrants(sql: Tx, orgId: string, ownerAddress: string, addresses: string[]) {
  return sql<{ address: string; grant: GrantState }[]>`
    select c.address, ${grantState(sql)} as grant from contacts c
     where c.org_id = ${orgId} and c.owner_address = ${ownerAddress} and c.address = any(${addresses})`
}

/** A `contact_counts as (update ...)` common table expression: one message more between the owners and the others. */
export function contactCountsUpdate(tx: Tx, m: { orgId: string; owners: string[]; others: string[]; inbound: boolean; at: Date }) {
  return tx`contact_counts as (
    update contacts set
      messages_received = messages_received + ${m.inbound ? 1 : 0},
      messages_sent = messages_sent + ${m.inbound ? 0 : 1},
      first_seen_at = least(coalesce(first_seen_at, ${m.at}), ${m.at}),
      last_contacted_at = greatest(coalesce(last_contacted_at, ${m.at}), ${m.at})
     where org_id = ${m.orgId} and owner_address = any(${m.owners}) and address = any(${m.others}))`
}
