/**
 * Contacts of the organization's addresses (create, upsert by address, list, read, update,
 * delete), declared once for REST, MCP and GraphQL (src/http/operation.ts). A connection key
 * reads only the contacts of its bound address (the service filters by it).
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Address, Deleted } from '../http/schema'
import { Contact, contactName, tag, tags } from './model'
import { deleteContact, getContact, listContacts, presentContact, saveContact, updateContact } from './service'

const TAG = 'Contacts'
const Id = { id: t.String({ format: 'uuid', description: 'the contact (from list_contacts)' }) }

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

export const contactOperations = [
  listOperation({
    name: 'list_contacts',
    method: 'GET',
    path: '/v1/contacts',
    tag: TAG,
    summary: 'List contacts',
    description:
      "Contacts of the organization's addresses, newest first, with how much mail went each way; the filters combine. A connection key sees the contacts of its own address only.",
    input: t.Object({
      owner_address: t.Optional(t.String({ minLength: 3, maxLength: 320, description: 'only the contacts of this address' })),
      q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'searches the address and the name' })),
      tag: t.Optional(tag),
    }),
    graphql: {
      field: 'contacts',
      type: 'Contact',
      description: 'Contacts, newest first (as GET /v1/contacts); the filters combine. A connection key sees the contacts of its own address only.',
    },
    list: {
      item: Contact,
      scope: ({ auth }, { owner_address, q, tag }) => `contacts:${auth.orgId}:${owner_address ?? ''}:${q ?? ''}:${tag ?? ''}`,
      fetch: ({ ctx, auth }, filter, page) => listContacts(ctx.sql, auth, filter, page),
      present: presentContact,
    },
  }),
  operation({
    name: 'create_contact',
    method: 'POST',
    path: '/v1/contacts',
    tag: TAG,
    summary: 'Create a contact',
    description:
      'Its counters start from the mail already stored between the two addresses. 409 conflict (details.reason contact_exists) when owner_address already has this contact; PUT /v1/contacts upserts instead. A contact created here records no send grant (see docs/networks.md).',
    input: ContactBody,
    output: Contact,
    status: 201,
    mcp: false,
    handle: async ({ ctx, auth }, body) => presentContact((await saveContact(ctx.sql, auth.orgId, body, { upsert: false })).row),
  }),
  operation({
    name: 'save_contact',
    method: 'PUT',
    path: '/v1/contacts',
    tag: TAG,
    summary: 'Create or update a contact by address',
    description: 'Keyed by owner_address and address: 201 when created, 200 when updated (omitted name and tags are kept).',
    input: ContactBody,
    output: Contact,
    status: 201,
    mayFindExisting: true,
    mcp: {
      description:
        'Keyed by owner_address and address: creates the contact, or updates its name and tags (omitted ones are kept; created: false). Records no send grant: admit_network_agent does.',
      reportsCreated: true,
    },
    async handle({ ctx, auth, status }, body) {
      const { row, created } = await saveContact(ctx.sql, auth.orgId, body, { upsert: true })
      if (!created) status?.(200)
      return presentContact(row)
    },
  }),
  operation({
    name: 'get_contact',
    method: 'GET',
    path: '/v1/contacts/:id',
    tag: TAG,
    summary: 'Read a contact',
    description: 'A connection key reads the contacts of its own address only (another is 404).',
    params: Id,
    resource: 'contact',
    output: Contact,
    graphql: { field: 'contact', type: 'Contact' },
    handle: async ({ ctx, auth }, { id }) => presentContact(await getContact(ctx.sql, auth, id)),
  }),
  operation({
    name: 'update_contact',
    method: 'PATCH',
    path: '/v1/contacts/:id',
    tag: TAG,
    summary: 'Rename or retag a contact',
    description: 'tags replaces the list; name null clears it.',
    params: Id,
    resource: 'contact',
    input: t.Object({ name: t.Optional(contactName), tags: t.Optional(tags) }, { additionalProperties: false, minProperties: 1 }),
    output: Contact,
    mcp: false,
    handle: async ({ ctx, auth }, { id, ...changes }) => presentContact(await updateContact(ctx.sql, auth, id, changes)),
  }),
  operation({
    name: 'delete_contact',
    method: 'DELETE',
    path: '/v1/contacts/:id',
    tag: TAG,
    summary: 'Delete a contact',
    description: 'Deletes the contact; its send grant goes with it.',
    params: Id,
    resource: 'contact',
    output: Deleted,
    handle: ({ ctx, auth }, { id }) => deleteContact(ctx.sql, auth, id),
  }),
]
