/**
 * Address notes: what the organization knows about an address, written by a member (any
 * credential of a person, or a key without one), a function (its runtime key) or an agent
 * connection (its connection key). Everyone in the organization reads every note. Edits and
 * deletes: the organization's own credentials may change any note; a connection key only the
 * notes authored by its bound address (by any connection of that address, so a reconnected
 * runtime keeps its notes). Edits carry the version they change (If-Match): a stale one is 412.
 */
import { randomUUIDv7 } from 'bun'
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import { normalizeAddress } from '../connections/service'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import type { AddressNote } from './model'
import { functionOfRuntimeKey } from '../functions/queries'

interface NoteRow {
  id: string
  address: string
  body: string
  author_kind: 'member' | 'function' | 'connection'
  author_id: string
  author_address: string | null
  version: number
  created_at: Date
  updated_at: Date
}

export const presentNote = (row: NoteRow): Static<typeof AddressNote> => ({
  id: row.id,
  address: row.address,
  body: row.body,
  author: { kind: row.author_kind, id: row.author_id, address: row.author_address },
  version: row.version,
  created_at: iso(row.created_at)!,
  updated_at: iso(row.updated_at)!,
})

/** Who the credential writes as. */
async function authorOf(sql: Tx, auth: Auth): Promise<Pick<NoteRow, 'author_kind' | 'author_id' | 'author_address'>> {
  if (auth.method === 'connection') return { author_kind: 'connection', author_id: auth.keyId, author_address: auth.boundAddress! }
  const fn = await functionOfRuntimeKey(sql, auth.orgId, auth.keyId)
  if (fn) return { author_kind: 'function', author_id: fn.id, author_address: null }
  return { author_kind: 'member', author_id: auth.userId ?? auth.keyId, author_address: null }
}

export async function createNote(sql: Sql, auth: Auth, input: { address: string; body: string }): Promise<NoteRow> {
  const address = normalizeAddress(input.address)
  const author = await authorOf(sql, auth)
  const [row] = await sql<NoteRow[]>`
    insert into address_notes (id, org_id, address, body, author_kind, author_id, author_address)
    values (${randomUUIDv7()}, ${auth.orgId}, ${address}, ${input.body}, ${author.author_kind}, ${author.author_id}, ${author.author_address})
    returning *`
  return row!
}

export async function getNote(sql: Tx, auth: Auth, id: string): Promise<NoteRow> {
  const [row] = await sql<NoteRow[]>`select * from address_notes where org_id = ${auth.orgId} and id = ${id}`
  if (!row) throw errors.notFound('address note')
  return row
}

/** A page of the organization's notes, newest first, optionally about one address. */
export async function listNotes(sql: Sql, auth: Auth, filter: { address?: string }, page: PageRequest) {
  const where = filter.address ? sql`org_id = ${auth.orgId} and address = ${normalizeAddress(filter.address)}` : sql`org_id = ${auth.orgId}`
  return listPage<NoteRow>(sql, { columns: sql`*`, from: sql`address_notes`, where, page })
}

/** The note, locked, if the credential may change it: 403 for a connection key and another author's note. */
async function writable(tx: Tx, auth: Auth, id: string, ifVersion: number | undefined): Promise<NoteRow> {
  const [row] = await tx<NoteRow[]>`select * from address_notes where org_id = ${auth.orgId} and id = ${id} for update`
  if (!row) throw errors.notFound('address note')
  if (auth.method === 'connection' && row.author_address !== auth.boundAddress) {
    throw errors.forbidden(`address note: a connection key changes only notes authored by its own address ${auth.boundAddress}`)
  }
  if (ifVersion !== undefined && ifVersion !== row.version) {
    throw new ApiError('precondition_failed', `If-Match: the note is at version ${row.version}, not ${ifVersion}`, { current_version: row.version })
  }
  return row
}

export async function updateNote(sql: Sql, auth: Auth, id: string, ifVersion: number, body: string): Promise<NoteRow> {
  return sql.begin(async tx => {
    await writable(tx, auth, id, ifVersion)
    const [row] = await tx<NoteRow[]>`
      update address_notes set body = ${body}, version = version + 1, updated_at = now() where id = ${id} returning *`
    return row!
  })
}

export async function deleteNote(sql: Sql, auth: Auth, id: string, ifVersion: number | undefined): Promise<{ id: string; deleted: true }> {
  return sql.begin(async tx => {
    await writable(tx, auth, id, ifVersion)
    await tx`delete from address_notes where id = ${id}`
    return { id, deleted: true as const }
  })
}
