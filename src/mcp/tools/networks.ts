/**
 * Network, contact and address-note tools (the Agent Networks, Contacts and Address Notes
 * routes): what an agent does with them, browsing the directories of its networks, admitting an
 * agent it found as a contact, keeping its contacts, and notes about addresses. Network
 * management and publishing stay on the REST API. The services check what a connection key may
 * do (browse with can_view, admit only for its own address, edit only its own notes).
 */
import { Type } from '@sinclair/typebox'
import { Contact, contactName, tag, tags } from '../../contacts/model'
import { deleteContact, getContact, listContacts, presentContact, saveContact } from '../../contacts/service'
import { Deleted } from '../../http/schema'
import { admitAgent, discoverAgents, presentDiscovered } from '../../networks/discovery'
import { DiscoveredAgent, Network, skill } from '../../networks/model'
import { listNetworks, presentFor } from '../../networks/service'
import { AddressNote, NOTE_BODY_MAX } from '../../notes/model'
import { Address } from '../../http/schema'
import { createNote, deleteNote, getNote, listNotes, presentNote, updateNote } from '../../notes/service'
import { PageInput, PageOf, toolPage } from '../schema'
import { READ, tool, WRITE } from '../tool'

const Id = (description: string) => Type.String({ format: 'uuid', description })
const AddressOf = (description: string) => Type.String({ minLength: 3, maxLength: 320, description })
const NoteBody = Type.String({ minLength: 1, maxLength: NOTE_BODY_MAX, description: `plain text, up to ${NOTE_BODY_MAX} characters` })

export const networkTools = [
  tool({
    name: 'list_networks',
    title: 'List agent networks',
    description: 'Networks this organization belongs to or is invited to, newest first, with its membership (a connection key: only those it may browse).',
    input: Type.Object(PageInput),
    output: PageOf(Network),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/networks' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `networks:${auth.orgId}:${auth.method === 'connection'}`
      return toolPage(ctx, scope, args, page => listNetworks(ctx.sql, auth, page), presentFor(auth.orgId))
    },
  }),
  tool({
    name: 'discover_network_agents',
    title: 'Discover agents in a network',
    description:
      "The agents a network's members publish (address, name, description, skills, whether they accept contacts), newest first. Needs an active membership with can_view.",
    input: Type.Object({
      network_id: Id('from list_networks'),
      ...PageInput,
      q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'searches address, display name and description' })),
      skill: Type.Optional(skill),
    }),
    output: PageOf(DiscoveredAgent),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/networks/:id/agents' },
    handle: async ({ ctx, auth }, { network_id, ...args }) => {
      const scope = `network-agents:${network_id}:${args.q ?? ''}:${args.skill ?? ''}`
      return toolPage(ctx, scope, args, page => discoverAgents(ctx.sql, auth, network_id, args, page), presentDiscovered)
    },
  }),
  tool({
    name: 'admit_network_agent',
    title: 'Admit a discovered agent as a contact',
    description:
      'Makes an agent found with discover_network_agents a contact of owner_address (a connection key: its own address only) and records a send grant, so owner_address may write to it first. ' +
      'conflict (details.reason not_accepting_contacts) when the agent does not accept contacts. Admitting again updates the contact.',
    input: Type.Object({
      network_id: Id('the network the agent was found in'),
      agent_id: Id('the id from discover_network_agents'),
      owner_address: AddressOf("the organization's address the agent becomes a contact of"),
      name: Type.Optional(contactName),
      tags: Type.Optional(tags),
    }),
    output: Type.Object({ ...Contact.properties, created: Type.Boolean({ description: 'false when an existing contact was updated' }) }),
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'POST', path: '/v1/networks/:id/agents/:agent_id/admit' },
    handle: async ({ ctx, auth }, { network_id, agent_id, ...input }) => {
      const { row, created } = await admitAgent(ctx.sql, auth, network_id, agent_id, input)
      return { ...presentContact(row), created }
    },
  }),
  tool({
    name: 'list_contacts',
    title: 'List contacts',
    description: "Contacts of the organization's addresses, newest first, with how much mail went each way.",
    input: Type.Object({
      ...PageInput,
      owner_address: Type.Optional(AddressOf('only the contacts of this address')),
      q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'searches the address and the name' })),
      tag: Type.Optional(tag),
    }),
    output: PageOf(Contact),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/contacts' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `contacts:${auth.orgId}:${args.owner_address ?? ''}:${args.q ?? ''}:${args.tag ?? ''}`
      return toolPage(ctx, scope, args, page => listContacts(ctx.sql, auth, args, page), presentContact)
    },
  }),
  tool({
    name: 'get_contact',
    title: 'Get a contact',
    description: 'One contact by id.',
    input: Type.Object({ contact_id: Id('from list_contacts') }),
    output: Contact,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/contacts/:id' },
    handle: async ({ ctx, auth }, args) => presentContact(await getContact(ctx.sql, auth, args.contact_id)),
  }),
  tool({
    name: 'save_contact',
    title: 'Create or update a contact',
    description:
      'Keyed by owner_address and address: creates the contact, or updates its name and tags (omitted ones are kept). Records no send grant: admit_network_agent does.',
    input: Type.Object({
      owner_address: AddressOf("the organization's address (managed inbox or at a verified domain) whose contact this is"),
      address: Type.String({ ...Address, description: 'the correspondent' }),
      name: Type.Optional(contactName),
      tags: Type.Optional(tags),
    }),
    output: Type.Object({ ...Contact.properties, created: Type.Boolean({ description: 'false when an existing contact was updated' }) }),
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'PUT', path: '/v1/contacts' },
    handle: async ({ ctx, auth }, args) => {
      const { row, created } = await saveContact(ctx.sql, auth.orgId, args, { upsert: true })
      return { ...presentContact(row), created }
    },
  }),
  tool({
    name: 'delete_contact',
    title: 'Delete a contact',
    description: 'Deletes a contact and its send grant.',
    input: Type.Object({ contact_id: Id('the contact') }),
    output: Deleted,
    annotations: { ...WRITE, destructiveHint: true },
    rest: { method: 'DELETE', path: '/v1/contacts/:id' },
    handle: async ({ ctx, auth }, args) => deleteContact(ctx.sql, auth, args.contact_id),
  }),
  tool({
    name: 'list_address_notes',
    title: 'List address notes',
    description: "The organization's notes about addresses, newest first, with who wrote each (a member, a function or an agent's address).",
    input: Type.Object({ ...PageInput, address: Type.Optional(AddressOf('only the notes about this address')) }),
    output: PageOf(AddressNote),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/address-notes' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `address-notes:${auth.orgId}:${args.address ?? ''}`
      return toolPage(ctx, scope, args, page => listNotes(ctx.sql, auth, args, page), presentNote)
    },
  }),
  tool({
    name: 'get_address_note',
    title: 'Read an address note',
    description: 'One note with its version (pass it as if_version to edit).',
    input: Type.Object({ note_id: Id('from list_address_notes') }),
    output: AddressNote,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/address-notes/:id' },
    handle: async ({ ctx, auth }, args) => presentNote(await getNote(ctx.sql, auth, args.note_id)),
  }),
  tool({
    name: 'create_address_note',
    title: 'Write an address note',
    description: 'A note about an address (a correspondent, a sender to watch), shared with the organization; the author is the credential.',
    input: Type.Object({ address: Type.String({ ...Address, description: 'the address the note is about' }), body: NoteBody }),
    output: AddressNote,
    annotations: WRITE,
    rest: { method: 'POST', path: '/v1/address-notes' },
    handle: async ({ ctx, auth }, args) => presentNote(await createNote(ctx.sql, auth, args)),
  }),
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
