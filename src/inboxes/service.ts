/** Managed inbox addresses under the managed domain, owned by one organization each. */
import { randomUUIDv7 } from 'bun'
import { randomBytes } from 'node:crypto'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { isUniqueViolation } from '../db/errors'

export interface InboxRow {
  id: string
  address: string
  display_name: string | null
  created_at: Date
}

/** The inbox as the agent signup shows it. */
export const presentInbox = (i: Pick<InboxRow, 'id' | 'address' | 'created_at'>) => ({ id: i.id, address: i.address, created_at: iso(i.created_at)! })

/** The inbox as the inbox routes show it. */
export const presentManagedInbox = (i: InboxRow) => ({ id: i.id, address: i.address, display_name: i.display_name, created_at: iso(i.created_at)! })

const ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789' // no 0/o, 1/l: addresses get read aloud and retyped

function randomLocalPart(prefix: string): string {
  const bytes = randomBytes(10)
  return prefix + Array.from(bytes, b => ALPHABET[b % ALPHABET.length]).join('')
}

export const LOCAL_PART = /^[a-z0-9][a-z0-9._-]{0,62}$/

/**
 * Names nobody may take on the shared managed domain: the role addresses of RFC 2142 and RFC
 * 5321, and names that would pass for the service itself in a phishing mail.
 */
export const RESERVED_LOCAL_PARTS: ReadonlySet<string> = new Set([
  'postmaster',
  'abuse',
  'hostmaster',
  'webmaster',
  'security',
  'noc',
  'admin',
  'administrator',
  'root',
  'mailer-daemon',
  'noreply',
  'no-reply',
  'nobody',
  'dmarc',
  'tls-rpt',
  'support',
  'billing',
  'info',
  'help',
  'www',
  'ftp',
  'mail',
  'system',
])

/** The local part in canonical form; throws validation_error naming `local_part`. */
export function normalizeLocalPart(input: string): string {
  const local = input.trim().toLowerCase()
  if (!LOCAL_PART.test(local)) {
    throw errors.validation('local_part', 'must start with a letter or digit and contain only letters, digits, ".", "_" and "-" (at most 63 characters)')
  }
  if (local.endsWith('.') || local.includes('..')) throw errors.validation('local_part', 'must not end with a dot or contain two dots in a row')
  if (RESERVED_LOCAL_PARTS.has(local)) throw errors.validation('local_part', `${local} is reserved`)
  return local
}

function normalizeDisplayName(input: string | undefined): string | null {
  if (input === undefined) return null
  const name = input.trim()
  if (!name) throw errors.validation('display_name', 'must not be empty')
  // it becomes the phrase of a From header: a line break there would inject headers
  if (/\p{Cc}/u.test(name)) throw errors.validation('display_name', 'must not contain control characters or line breaks')
  return name
}

async function insertInbox(tx: Tx, orgId: string, address: string, displayName: string | null): Promise<InboxRow> {
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

/** A new managed address `<prefix><random>@<domain>` for the organization. */
export async function createManagedInbox(tx: Tx, orgId: string, domain: string, prefix = 'agent-'): Promise<InboxRow> {
  return insertInbox(tx, orgId, `${randomLocalPart(prefix)}@${domain}`, null)
}

/** A managed address of the organization: `<local_part>@<domain>`, or a random one when no local part is asked for. */
export async function createInbox(sql: Sql, orgId: string, domain: string, input: { local_part?: string; display_name?: string }): Promise<InboxRow> {
  const displayName = normalizeDisplayName(input.display_name)
  if (input.local_part === undefined) return insertInbox(sql, orgId, `${randomLocalPart('agent-')}@${domain}`, displayName)
  return insertInbox(sql, orgId, `${normalizeLocalPart(input.local_part)}@${domain}`, displayName)
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
