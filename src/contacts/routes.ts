/** Contacts of the organization's addresses: create, upsert by address, list, read, update, delete. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { Deleted, IdParams } from '../http/schema'
import { Address } from '../http/schema'
import { Contact, contactName, tag, tags } from './model'
import { deleteContact, getContact, listContacts, presentContact, saveContact, updateContact } from './service'

const ContactBody = t.Object(
  {
    owner_address: t.String({
      minLength: 3,
      maxLength: 320,
      description: "the organization's address (managed inbox or at a verified domain) whose contact this is",
    }),
    address: t.String({ ...Address, description: 'the correspondent' }),
    name: t.Optional(contactName),
    tags: t.Optional(tags),
  },
  { additionalProperties: false },
)

export function contactRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/contacts', tags: ['Contacts'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `contacts:${auth.orgId}:${query.owner_address ?? ''}:${query.q ?? ''}:${query.tag ?? ''}`
        return cursors(ctx).read(scope, query, page => listContacts(ctx.sql, auth, query, page), presentContact)
      },
      {
        query: t.Object({
          ...pageQuery(),
          owner_address: t.Optional(t.String({ minLength: 3, maxLength: 320, description: 'only the contacts of this address' })),
          q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'searches the address and the name' })),
          tag: t.Optional(tag),
        }),
        response: { 200: Paged(Contact) },
        detail: { summary: 'List contacts', description: 'Newest first.' },
      },
    )
    .post(
      '/',
      async ({ auth, body, set }) => {
        set.status = 201
        return presentContact((await saveContact(ctx.sql, auth.orgId, body, { upsert: false })).row)
      },
      {
        body: ContactBody,
        response: { 201: Ok(Contact) },
        detail: {
          summary: 'Create a contact',
          description:
            'Its counters start from the mail already stored between the two addresses. 409 conflict (details.reason contact_exists) when owner_address already has this contact; PUT /v1/contacts upserts instead. A contact created here records no send grant (see docs/networks.md).',
        },
      },
    )
    .put(
      '/',
      async ({ auth, body, set }) => {
        const { row, created } = await saveContact(ctx.sql, auth.orgId, body, { upsert: true })
        set.status = created ? 201 : 200
        return presentContact(row)
      },
      {
        body: ContactBody,
        response: { 200: Ok(Contact), 201: Ok(Contact) },
        detail: {
          summary: 'Create or update a contact by address',
          description: 'Keyed by owner_address and address: 201 when created, 200 when updated (omitted name and tags are kept).',
        },
      },
    )
    .get('/:id', async ({ auth, params }) => presentContact(await getContact(ctx.sql, auth, params.id)), {
      params: IdParams,
      response: { 200: Ok(Contact) },
      detail: { summary: 'Read a contact' },
    })
    .patch('/:id', async ({ auth, params, body }) => presentContact(await updateContact(ctx.sql, auth, params.id, body)), {
      params: IdParams,
      body: t.Object({ name: t.Optional(contactName), tags: t.Optional(tags) }, { additionalProperties: false, minProperties: 1 }),
      response: { 200: Ok(Contact) },
      detail: { summary: 'Rename or retag a contact', description: 'tags replaces the list; name null clears it.' },
    })
    .delete('/:id', ({ auth, params }) => deleteContact(ctx.sql, auth, params.id), {
      params: IdParams,
      response: { 200: Ok(Deleted) },
      detail: { summary: 'Delete a contact', description: 'Its send grant goes with it.' },
    })
}
