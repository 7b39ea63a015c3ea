/**
 * The statements of managed inboxes (`managed_inboxes`): the pipeline resolves recipients and
 * senders through them, `inboxes/` makes and lists them. No other folder names the table.
 */
import { randomUUIDv7 } from 'bun'
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'
import { isUniqueViolation } from '../db/errors'
import { errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'

export interface InboxRow {
  id: string
  address: string
  display_name: string | null
  created_at: Date
}

/** Inserts a managed inbox; an address already taken is a conflict naming `local_part`. */
export async function insertInbox(tx: Tx, orgId: string, address: string, displayName: string | null): Promise<InboxRow> {
  try {
    const [row] = await tx<InboxRow[]>`
      insert into managed_inboxes (id, org_id, address, display_name)
      values (${randomUUIDv7()}, ${orgId}, ${address.toLowerCase()}, ${displayName})
      returning id, address, display_name, created_at`
    return row!
  } catch (error) {
    if (isUniqueViolation(error)) throw errors.conflict(`local_part: ${address} is taken`)
    throw error
  }
}

export async function listInboxes(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<InboxRow>(sql, {
    columns: sql`id, address, display_name, created_at`,
    from: sql`managed_inboxes`,
    where: sql`org_id = ${orgId}`,
    page,
  })
}

/** One inbox of the organization; another organization's is not_found. */
export async function getInbox(sql: Sql, orgId: string, id: string): Promise<InboxRow> {
  const [row] = await sql<InboxRow[]>`select id, address, display_name, created_at from managed_inboxes where id = ${id} and org_id = ${orgId}`
  if (!row) throw errors.notFound('inbox')
  return row
}

/** Deletes the inbox: mail to its address is refused from then on, and the address can be taken again. */
export async function deleteInbox(sql: Sql, orgId: string, id: string): Promise<{ id: string }> {
  const [row] = await sql<{ id: string }[]>`delete from managed_inboxes where id = ${id} and org_id = ${orgId} returning id`
  if (!row) throw errors.notFound('inbox')
  return row
}

/** The organization owning a managed address (any case), or null when no inbox has it. */
export async function managedInboxOwner(sql: Sql, address: string): Promise<{ orgId: string; inboxId: string } | null> {
  const [row] = await sql<{ id: string; org_id: string }[]>`
    select id, org_id from managed_inboxes where address = ${address.trim().toLowerCase()}`
  return row ? { orgId: row.org_id, inboxId: row.id } : null
}

/** The organization's managed addresses, in order. */
export async function inboxAddresses(sql: Tx, orgId: string): Promise<string[]> {
  const rows = await sql<{ address: string }[]>`select address from managed_inboxes where org_id = ${orgId} order by address`
  return rows.map(r => r.address)
}

/** Whether `address` is a managed inbox of the organization `org` (an id, or a column of the enclosing statement), as a condition. */
export const isInboxOf = (sql: Tx, org: string | postgres.Fragment, address: string): postgres.Fragment =>
  sql`exists (select 1 from managed_inboxes where org_id = ${org} and address = ${address})`

/** The display name of the organization's inbox `address` (null when none), as a scalar of the enclosing statement. */
export const inboxDisplayName = (sql: Tx, org: string | postgres.Fragment, address: string): postgres.Fragment =>
  sql`(select display_name from managed_inboxes where org_id = ${org} and address = ${address})`

/** `managed_inboxes` under `alias`, for a statement of another folder that reads inboxes in its own round trip. */
export const managedInboxesAs = (sql: Tx, alias: string): postgres.Fragment => sql`managed_inboxes ${sql(alias)}`
