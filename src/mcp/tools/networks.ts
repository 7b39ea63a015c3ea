/**
 * The address-note tools still written by hand: editing and deleting take the version as
 * if_version, where REST takes it in If-Match (src/notes/routes.ts). The other network, contact
 * and address-note tools are made from their operations (networks/, contacts/, notes/
 * operations.ts). The service lets a connection key edit only the notes its address wrote.
 */
import { Type } from '@sinclair/typebox'
import { Deleted } from '../../http/schema'
import { AddressNote } from '../../notes/model'
import { NoteBody } from '../../notes/operations'
import { deleteNote, presentNote, updateNote } from '../../notes/service'
import { tool, WRITE } from '../tool'

const Id = (description: string) => Type.String({ format: 'uuid', description })

export const networkTools = [
  tool({
    name: 'update_address_note',
    title: 'Edit an address note',
    description:
      'Replaces the body of a note at the version you read (precondition_failed with details.current_version otherwise). A connection key edits only the notes its address wrote.',
    input: Type.Object({ note_id: Id('the note'), body: NoteBody, if_version: Type.Integer({ minimum: 1, description: 'required: the version you read' }) }),
    output: AddressNote,
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'PATCH', path: '/v1/address-notes/:id' },
    handle: async ({ ctx, auth }, args) => presentNote(await updateNote(ctx.sql, auth, args.note_id, args.if_version, args.body)),
  }),
  tool({
    name: 'delete_address_note',
    title: 'Delete an address note',
    description: 'Deletes a note (with if_version: only that version). A connection key deletes only the notes its address wrote.',
    input: Type.Object({ note_id: Id('the note'), if_version: Type.Optional(Type.Integer({ minimum: 1, description: 'delete only this version' })) }),
    output: Deleted,
    annotations: { ...WRITE, destructiveHint: true },
    rest: { method: 'DELETE', path: '/v1/address-notes/:id' },
    handle: async ({ ctx, auth }, args) => deleteNote(ctx.sql, auth, args.note_id, args.if_version),
  }),
]
