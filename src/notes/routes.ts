/** Address notes: list, write, read, edit (If-Match), delete. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { errors } from '../errors'
import { cursors, pageQuery } from '../http/pagination'
import { Deleted, IdParams } from '../http/schema'
import { Address } from '../http/schema'
import { AddressNote, NOTE_BODY_MAX } from './model'
import { createNote, deleteNote, getNote, listNotes, presentNote, updateNote } from './service'

const body = t.String({ minLength: 1, maxLength: NOTE_BODY_MAX, description: `plain text, up to ${NOTE_BODY_MAX} characters` })
const etag = (version: number) => `"${version}"`

/** The version an If-Match header names (`"3"`, `W/"3"` or `3`); undefined without the header. */
function ifMatch(header: string | undefined, required: boolean): number | undefined {
  const value = header?.trim()
  if (value === undefined) {
    if (required) throw errors.validation('If-Match', 'required: the version of the note being edited (its ETag)')
    return undefined
  }
  const m = /^(?:W\/)?"?(\d{1,9})"?$/.exec(value)
  if (!m) throw errors.validation('If-Match', 'must be a version such as "3" (the ETag of a read)')
  return Number(m[1])
}

const RULE = "The organization's own credentials may change any note; a connection key only notes authored by its bound address (403 otherwise)."

export function noteRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/address-notes', tags: ['Address Notes'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `address-notes:${auth.orgId}:${query.address ?? ''}`
        return cursors(ctx).read(scope, query, page => listNotes(ctx.sql, auth, query, page), presentNote)
      },
      {
        query: t.Object({ ...pageQuery(), address: t.Optional(t.String({ minLength: 3, maxLength: 320, description: 'only the notes about this address' })) }),
        response: { 200: Paged(AddressNote) },
        detail: { summary: 'List address notes', description: 'Every note of the organization, newest first; connection keys read them all too.' },
      },
    )
    .post(
      '/',
      async ({ auth, body, set }) => {
        const row = await createNote(ctx.sql, auth, body)
        set.status = 201
        set.headers.etag = etag(row.version)
        return presentNote(row)
      },
      {
        body: t.Object({ address: t.String({ ...Address, description: 'the address the note is about' }), body }, { additionalProperties: false }),
        response: { 201: Ok(AddressNote) },
        detail: {
          summary: 'Write a note about an address',
          description: 'The author is the credential: a member, a function (its runtime key) or an agent connection (its bound address).',
        },
      },
    )
    .get(
      '/:id',
      async ({ auth, params, set }) => {
        const row = await getNote(ctx.sql, auth, params.id)
        set.headers.etag = etag(row.version)
        return presentNote(row)
      },
      { params: IdParams, response: { 200: Ok(AddressNote) }, detail: { summary: 'Read a note', description: 'The ETag header carries its version.' } },
    )
    .patch(
      '/:id',
      async ({ auth, params, body, headers, set }) => {
        const row = await updateNote(ctx.sql, auth, params.id, ifMatch(headers['if-match'], true)!, body.body)
        set.headers.etag = etag(row.version)
        return presentNote(row)
      },
      {
        params: IdParams,
        headers: t.Object({ 'if-match': t.Optional(t.String({ description: 'required: the version being edited, as the ETag gives it ("3")' })) }),
        body: t.Object({ body }, { additionalProperties: false }),
        response: { 200: Ok(AddressNote) },
        detail: { summary: 'Edit a note', description: `If-Match is required; a stale version is 412 precondition_failed (details.current_version). ${RULE}` },
      },
    )
    .delete('/:id', ({ auth, params, headers }) => deleteNote(ctx.sql, auth, params.id, ifMatch(headers['if-match'], false)), {
      params: IdParams,
      headers: t.Object({ 'if-match': t.Optional(t.String({ description: 'optional: delete only this version' })) }),
      response: { 200: Ok(Deleted) },
      detail: { summary: 'Delete a note', description: RULE },
    })
}
