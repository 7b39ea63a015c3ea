/**
 * Address notes: listed, written and read, declared once for REST, MCP and GraphQL
 * (src/http/operation.ts). REST answers a note with its version as the ETag. Editing and deleting
 * stay hand-written (routes.ts, and their MCP tools): REST takes the version in If-Match, a tool
 * in its if_version argument.
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Address } from '../http/schema'
import { AddressNote, NOTE_BODY_MAX } from './model'
import { createNote, getNote, listNotes, presentNote } from './service'

const TAG = 'Address Notes'

export const etag = (version: number) => `"${version}"`
export const NoteBody = t.String({ minLength: 1, maxLength: NOTE_BODY_MAX, description: `plain text, up to ${NOTE_BODY_MAX} characters` })

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
    async handle({ ctx, auth, header }, body) {
      const row = await createNote(ctx.sql, auth, body)
      header?.('etag', etag(row.version))
      return presentNote(row)
    },
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
    async handle({ ctx, auth, header }, { id }) {
      const row = await getNote(ctx.sql, auth, id)
      header?.('etag', etag(row.version))
      return presentNote(row)
    },
  }),
]
