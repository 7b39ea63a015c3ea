/**
 * Address notes: listed, written, read, edited and deleted, declared once for REST, MCP and
 * GraphQL (src/http/operation.ts). REST answers a note with its version as the ETag, and takes
 * the version to edit or delete in If-Match; a tool takes it as its if_version argument.
 */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { errors } from '../errors'
import { listOperation, operation, type OperationCall } from '../http/operation'
import { Address, Deleted, IdParam } from '../http/schema'
import { AddressNote, NOTE_BODY_MAX } from './model'
import type { NoteRow } from './queries'
import { createNote, deleteNote, getNote, listNotes, presentNote, updateNote } from './service'

const TAG = 'Address Notes'

export const etag = (version: number) => `"${version}"`
export const NoteBody = t.String({ minLength: 1, maxLength: NOTE_BODY_MAX, description: `plain text, up to ${NOTE_BODY_MAX} characters` })

const RULE = "The organization's own credentials may change any note; a connection key only notes authored by its bound address (403 otherwise)."

/**
 * The version to edit or delete: a tool's if_version, or REST's If-Match header (`"3"`, `W/"3"`
 * or `3`); undefined without either.
 */
function versionOf(value: number | string | undefined, required: boolean): number | undefined {
  if (typeof value === 'number') return value
  const header = value?.trim()
  if (header === undefined) {
    if (required) throw errors.validation('If-Match', 'required: the version of the note being edited (its ETag)')
    return undefined
  }
  const m = /^(?:W\/)?"?(\d{1,9})"?$/.exec(header)
  if (!m) throw errors.validation('If-Match', 'must be a version such as "3" (the ETag of a read)')
  return Number(m[1])
}

/** A note as an answer, with its version as REST's ETag. */
function versioned({ header }: OperationCall, row: NoteRow) {
  header?.('etag', etag(row.version))
  return presentNote(row)
}

/** A tool's note_id. */
const NoteId = { note_id: Type.String({ format: 'uuid', description: 'the note' }) }

export const noteOperations = [
  listOperation({
    name: 'list_address_notes',
    method: 'GET',
    path: '/v1/address-notes',
    tag: TAG,
    summary: 'List address notes',
    description:
      "Every note of the organization, newest first, with who wrote each (a member, a function or an agent's address); connection keys read them all too.",
    input: t.Object({ address: t.Optional(t.String({ minLength: 3, maxLength: 320, description: 'only the notes about this address' })) }),
    graphql: {
      field: 'addressNotes',
      type: 'AddressNote',
      description: "The organization's address notes, newest first, optionally about one address (as GET /v1/address-notes). Connection keys read them all.",
    },
    list: {
      item: AddressNote,
      scope: ({ auth }, { address }) => `address-notes:${auth.orgId}:${address ?? ''}`,
      fetch: ({ ctx, auth }, filter, page) => listNotes(ctx.sql, auth, filter, page),
      present: presentNote,
    },
  }),
  operation({
    name: 'create_address_note',
    method: 'POST',
    path: '/v1/address-notes',
    tag: TAG,
    summary: 'Write a note about an address',
    description:
      'A note about an address (a correspondent, a sender to watch), shared with the organization. The author is the credential: a member, a function (its runtime key) or an agent connection (its bound address). REST gives its version as the ETag.',
    input: t.Object({ address: t.String({ ...Address, description: 'the address the note is about' }), body: NoteBody }, { additionalProperties: false }),
    output: AddressNote,
    status: 201,
    handle: async (call, body) => versioned(call, await createNote(call.ctx.sql, call.auth, body)),
  }),
  operation({
    name: 'get_address_note',
    method: 'GET',
    path: '/v1/address-notes/:id',
    tag: TAG,
    summary: 'Read a note',
    description: 'One note with its version (the ETag header in REST; pass it as If-Match, or as if_version to a tool, to edit).',
    params: { id: t.String({ format: 'uuid', description: 'the note (from list_address_notes)' }) },
    resource: 'note',
    output: AddressNote,
    graphql: { field: 'addressNote', type: 'AddressNote' },
    handle: async (call, { id }) => versioned(call, await getNote(call.ctx.sql, call.auth, id)),
  }),
  operation({
    name: 'update_address_note',
    method: 'PATCH',
    path: '/v1/address-notes/:id',
    tag: TAG,
    summary: 'Edit a note',
    description: `If-Match is required; a stale version is 412 precondition_failed (details.current_version). ${RULE}`,
    params: IdParam,
    resource: 'note',
    input: t.Object(
      { body: NoteBody, if_version: t.Integer({ minimum: 1, description: 'required: the version being edited, as the ETag gives it ("3")' }) },
      { additionalProperties: false },
    ),
    headerArgs: { 'if-match': 'if_version' },
    output: AddressNote,
    mcp: {
      title: 'Edit an address note',
      description:
        'Replaces the body of a note at the version you read (precondition_failed with details.current_version otherwise). A connection key edits only the notes its address wrote.',
      args: Type.Object({ ...NoteId, if_version: Type.Integer({ minimum: 1, description: 'required: the version you read' }) }),
    },
    handle: async (call, { id, body, if_version }) => versioned(call, await updateNote(call.ctx.sql, call.auth, id, versionOf(if_version, true)!, body)),
  }),
  operation({
    name: 'delete_address_note',
    method: 'DELETE',
    path: '/v1/address-notes/:id',
    tag: TAG,
    summary: 'Delete a note',
    description: RULE,
    params: IdParam,
    resource: 'note',
    input: t.Object({ if_version: t.Optional(t.Integer({ minimum: 1, description: 'optional: delete only this version' })) }),
    headerArgs: { 'if-match': 'if_version' },
    output: Deleted,
    mcp: {
      title: 'Delete an address note',
      description: 'Deletes a note (with if_version: only that version). A connection key deletes only the notes its address wrote.',
      args: Type.Object({ ...NoteId, if_version: Type.Optional(Type.Integer({ minimum: 1, description: 'delete only this version' })) }),
    },
    handle: ({ ctx, auth }, { id, if_version }) => deleteNote(ctx.sql, auth, id, versionOf(if_version, false)),
  }),
]
