/** Managed inbox addresses under the managed domain, owned by one organization each. */
import { randomBytes } from 'node:crypto'
import type { Sql, Tx } from '../db/client'
import { type InboxRow, insertInbox } from '../mail/inbox-queries'
import { errors } from '../errors'
import { iso } from '../http/timestamps'

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
