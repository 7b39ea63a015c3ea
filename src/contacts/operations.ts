/**
 * Contacts of the organization's addresses (create, upsert by address, list, read, update,
 * delete), declared once for REST, MCP and GraphQL (src/http/operation.ts). A connection key
 * reads only the contacts of its bound address (the service filters by it).
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Address, Deleted } from '../http/schema'
import { TAG as NETWORKS_TAG } from '../networks/operations'
import { admitAgent } from './admission'
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

/**
 * Admitting an agent found in a network's directory as a contact: a contact operation, served
 * among the networks' (src/operations.ts lists it after them) under their tag.
 */
export const networkAdmissionOperations = [
  operation({
    name: 'admit_network_agent',
    method: 'POST',
    path: '/v1/networks/:id/agents/:agent_id/admit',
    tag: NETWORKS_TAG,
    summary: 'Admit a discovered agent as a contact',
    description:
      "Creates (201) or updates (200) the contact of owner_address for the agent's address and records a send grant: on the reply-only plan owner_address may then write to the agent first, while the agent accepts contacts in this network. Needs can_view; 409 conflict (details.reason not_accepting_contacts) when the agent does not accept contacts. A connection key may admit only for its own address (403 otherwise).",
    params: {
      id: t.String({ format: 'uuid', description: 'the network the agent was found in' }),
      agent_id: t.String({ format: 'uuid', description: 'the agent id from the directory (discover_network_agents)' }),
    },
    resource: 'network',
    input: t.Object(
      {
        owner_address: t.String({
          minLength: 3,
          maxLength: 320,
          description: "the organization's address the agent becomes a contact of; a connection key: its own bound address only",
        }),
        name: t.Optional(contactName),
        tags: t.Optional(tags),
      },
      { additionalProperties: false },
    ),
    output: Contact,
    status: 201,
    mayFindExisting: true,
    mcp: {
      description:
        'Makes an agent found with discover_network_agents a contact of owner_address (a connection key: its own address only) and records a send grant, so owner_address may write to it first. ' +
        'conflict (details.reason not_accepting_contacts) when the agent does not accept contacts. Admitting again updates the contact (created: false).',
      hints: { idempotentHint: true },
      reportsCreated: true,
    },
    async handle({ ctx, auth, status }, { id, agent_id, ...input }) {
      const { row, created } = await admitAgent(ctx.sql, auth, id, agent_id, input)
      if (!created) status?.(200)
      return presentContact(row)
    },
  }),
]
