/**
 * Address notes: what the organization knows about an address, written by a member (any
 * credential of a person, or a key without one), a function (its runtime key) or an agent
 * connection (its connection key). Everyone in the organization reads every note. Edits and
 * deletes: the organization's own credentials may change any note; a connection key only the
 * notes authored by its bound address (by any connection of that address, so a reconnected
 * runtime keeps its notes). Edits carry the version they change (If-Match): a stale one is 412.
 */
import type { Static } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import { normalizeAddress } from '../connections/service'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import type { AddressNote } from './model'
import { functionOfRuntimeKey } from '../functions/queries'
import { deleteNoteById, insertNote, type NoteAuthor, type NoteRow, noteById, notesPage, updateNoteBody } from './queries'

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
async function authorOf(sql: Tx, auth: Auth): Promise<NoteAuthor> {
  if (auth.method === 'connection') return { author_kind: 'connection', author_id: auth.keyId, author_address: auth.boundAddress! }
  const fn = await functionOfRuntimeKey(sql, auth.orgId, auth.keyId)
  if (fn) return { author_kind: 'function', author_id: fn.id, author_address: null }
  return { author_kind: 'member', author_id: auth.userId ?? auth.keyId, author_address: null }
}

export async function createNote(sql: Sql, auth: Auth, input: { address: string; body: string }): Promise<NoteRow> {
  const address = normalizeAddress(input.address)
  const author = await authorOf(sql, auth)
  return insertNote(sql, auth.orgId, address, input.body, author)
}

export async function getNote(sql: Tx, auth: Auth, id: string): Promise<NoteRow> {
  const row = await noteById(sql, auth.orgId, id)
  if (!row) throw errors.notFound('address note')
  return row
}

/** A page of the organization's notes, newest first, optionally about one address. */
export async function listNotes(sql: Sql, auth: Auth, filter: { address?: string }, page: PageRequest) {
  return notesPage(sql, auth.orgId, filter.address ? normalizeAddress(filter.address) : undefined, page)
}

/** The note, locked, if the credential may change it: 403 for a connection key and another author's note. */
async function writable(tx: Tx, auth: Auth, id: string, ifVersion: number | undefined): Promise<NoteRow> {
  const row = await noteById(tx, auth.orgId, id, true)
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
    return updateNoteBody(tx, id, body)
  })
}

export async function deleteNote(sql: Sql, auth: Auth, id: string, ifVersion: number | undefined): Promise<{ id: string; deleted: true }> {
  return sql.begin(async tx => {
    await writable(tx, auth, id, ifVersion)
    await deleteNoteById(tx, id)
    return { id, deleted: true as const }
  })
}
