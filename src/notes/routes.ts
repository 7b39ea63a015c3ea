/**
 * Address notes: the routes still written by hand, edit and delete, which take the version in
 * If-Match (a tool takes it as if_version). Listing, writing and reading are operations.ts.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok } from '../http/envelope'
import { errors } from '../errors'
import { Deleted, IdParams } from '../http/schema'
import { AddressNote } from './model'
import { etag, NoteBody } from './operations'
import { deleteNote, presentNote, updateNote } from './service'

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
        body: t.Object({ body: NoteBody }, { additionalProperties: false }),
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
