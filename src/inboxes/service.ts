/** Managed inbox addresses under the managed domain, owned by one organization each. */
import { randomUUIDv7 } from 'bun'
import { randomBytes } from 'node:crypto'
import type { Tx } from '../db/client'
import { iso } from '../http/timestamps'

export interface InboxRow {
  id: string
  address: string
  created_at: Date
}

export const presentInbox = (i: InboxRow) => ({ id: i.id, address: i.address, created_at: iso(i.created_at)! })

const ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789' // no 0/o, 1/l: addresses get read aloud and retyped

function randomLocalPart(prefix: string): string {
  const bytes = randomBytes(10)
  return prefix + Array.from(bytes, b => ALPHABET[b % ALPHABET.length]).join('')
}

/** A new managed address `<prefix><random>@<domain>` for the organization. */
export async function createManagedInbox(tx: Tx, orgId: string, domain: string, prefix = 'agent-'): Promise<InboxRow> {
  const [row] = await tx<InboxRow[]>`
    insert into managed_inboxes (id, org_id, address)
    values (${randomUUIDv7()}, ${orgId}, ${`${randomLocalPart(prefix)}@${domain}`.toLowerCase()})
    returning id, address, created_at`
  return row!
}
