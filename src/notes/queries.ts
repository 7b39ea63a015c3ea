/** The address_notes table (notes/ owns it): its row type and every statement on it. */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'

export interface NoteRow {
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

export type NoteAuthor = Pick<NoteRow, 'author_kind' | 'author_id' | 'author_address'>

export async function insertNote(sql: Sql, orgId: string, address: string, body: string, author: NoteAuthor): Promise<NoteRow> {
  const [row] = await sql<NoteRow[]>`
    insert into address_notes (id, org_id, address, body, author_kind, author_id, author_address)
    values (${randomUUIDv7()}, ${orgId}, ${address}, ${body}, ${author.author_kind}, ${author.author_id}, ${author.author_address})
    returning *`
  return row!
}

/** The organization's note `id`; `lock` takes it for update. */
export async function noteById(sql: Tx, orgId: string, id: string, lock = false): Promise<NoteRow | undefined> {
  const [row] = await sql<NoteRow[]>`select * from address_notes where org_id = ${orgId} and id = ${id} ${lock ? sql`for update` : sql``}`
  return row
}

/** A page of the organization's notes, newest first, about `address` if given (normalized). */
export function notesPage(sql: Sql, orgId: string, address: string | undefined, page: PageRequest) {
  const where = address ? sql`org_id = ${orgId} and address = ${address}` : sql`org_id = ${orgId}`
  return listPage<NoteRow>(sql, { columns: sql`*`, from: sql`address_notes`, where, page })
}

/** Replaces a note's body, one version up. */
export async function updateNoteBody(tx: Tx, id: string, body: string): Promise<NoteRow> {
  const [row] = await tx<NoteRow[]>`
    update address_notes set body = ${body}, version = version + 1, updated_at = now() where id = ${id} returning *`
  return row!
}

export async function deleteNoteById(tx: Tx, id: string): Promise<void> {
  await tx`delete from address_notes where id = ${id}`
}
