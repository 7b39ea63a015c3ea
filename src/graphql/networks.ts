/**
 * Agent networks (with their members and directories), published agents, contacts and address
 * notes. A network's members and directory are root fields taking the network's id, as their
 * REST reads are (`/v1/networks/{id}/members`, `/v1/networks/{id}/agents`): each reads one
 * network's list, so no query can make them read per network of a list.
 */
import { listNetworks, getNetwork, listMembers, presentFor, presentMember } from '../networks/service'
import { discoverAgents, presentDiscovered } from '../networks/discovery'
import { listPublished, presentPublished } from '../networks/publishing'
import { getContact, listContacts, presentContact } from '../contacts/service'
import { getNote, listNotes, presentNote } from '../notes/service'
import { allow, uuidArg } from './context'
import { CONNECTION_ARGS, connection, connectionTypes, pageOf, type ConnectionArgs } from './connection'
import type { SchemaModule } from './module'

export const networksModule: SchemaModule = {
  sdl: `
extend type Query {
  """
  The networks the organization belongs to or is invited to, newest first (as GET /v1/networks).
  A connection key sees those it may browse (active, canView).
  """
  networks(${CONNECTION_ARGS}): NetworkConnection
  "One network the organization is in (as GET /v1/networks/{id}). Not for connection keys."
  network(id: ID!): Network
  "A network's members, for its active members (as GET /v1/networks/{id}/members). Not for connection keys."
  networkMembers(networkId: ID!, ${CONNECTION_ARGS}): NetworkMemberConnection
  """
  A network's directory: the agents its active members publish, newest first (as GET
  /v1/networks/{id}/agents). Needs an active membership with canView; connection keys too.
  """
  networkAgents(networkId: ID!, ${CONNECTION_ARGS}, q: String, skill: String): DiscoveredAgentConnection
  "The addresses the organization publishes (as GET /v1/published-agents). Not for connection keys."
  publishedAgents: [PublishedAgent!]
  "Contacts, newest first (as GET /v1/contacts); the filters combine. Not for connection keys."
  contacts(${CONNECTION_ARGS}, ownerAddress: String, q: String, tag: String): ContactConnection
  contact(id: ID!): Contact
  "The organization's address notes, newest first, optionally about one address (as GET /v1/address-notes). Connection keys read them all."
  addressNotes(${CONNECTION_ARGS}, address: String): AddressNoteConnection
  addressNote(id: ID!): AddressNote
}

enum MembershipStatus { invited active }

type NetworkMembership {
  status: MembershipStatus!
  "whether this organization (and its connection keys) may browse the directory"
  canView: Boolean!
  isOwner: Boolean!
}

type Network {
  id: ID!
  name: String!
  description: String!
  ownerOrgId: ID!
  "the caller's organization in this network"
  membership: NetworkMembership!
  "active members"
  memberCount: Int!
  createdAt: DateTime!
}

type NetworkMember {
  orgId: ID!
  orgName: String!
  status: MembershipStatus!
  canView: Boolean!
  isOwner: Boolean!
  invitedAt: DateTime!
  joinedAt: DateTime
}

type AgentOrg {
  id: ID!
  name: String!
}

type DiscoveredAgent {
  id: ID!
  address: String!
  displayName: String!
  description: String!
  skills: [String!]!
  acceptsContacts: Boolean!
  lastActiveAt: DateTime
  org: AgentOrg!
}

type PublishedAgent {
  id: ID!
  address: String!
  displayName: String!
  description: String!
  skills: [String!]!
  acceptsContacts: Boolean!
  "networks, or public (also the built-in registry and an A2A agent card)"
  visibility: String!
  agentCardUrl: String
  lastActiveAt: DateTime
  createdAt: DateTime!
  updatedAt: DateTime!
}

type Contact {
  id: ID!
  "the organization's address whose contact this is"
  ownerAddress: String!
  "the correspondent"
  address: String!
  name: String
  tags: [String!]!
  "manual, or network (admitted from a network's directory)"
  source: String!
  networkId: ID
  agentId: ID
  "none, granted or denied: whether the reply-only send gate lets ownerAddress write to it first"
  sendGrant: String!
  firstSeenAt: DateTime
  lastContactedAt: DateTime
  messagesReceived: Int!
  messagesSent: Int!
  createdAt: DateTime!
  updatedAt: DateTime!
}

type NoteAuthor {
  "member, function or connection"
  kind: String!
  id: ID!
  "connection: the bound address, the only one that may edit the note"
  address: String
}

type AddressNote {
  id: ID!
  "the address the note is about"
  address: String!
  body: String!
  author: NoteAuthor!
  "increases with every edit; send it back in If-Match to edit (REST)"
  version: Int!
  createdAt: DateTime!
  updatedAt: DateTime!
}

${connectionTypes('Network', 'networks')}
${connectionTypes('NetworkMember', 'network members').replace('newest first', 'by organization')}
${connectionTypes('DiscoveredAgent', 'published agents')}
${connectionTypes('Contact', 'contacts')}
${connectionTypes('AddressNote', 'address notes')}
`,
  resolvers: {
    Query: {
      networks: async (_s, args: ConnectionArgs, g) => {
        const auth = allow(g, '/v1/networks', 'networks')
        const scope = `gql:networks:${auth.method === 'connection'}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await listNetworks(g.ctx.sql, auth, page), presentFor(auth.orgId))
      },
      network: async (_s, args: { id: string }, g) => getNetwork(g.ctx.sql, allow(g, '/v1/networks/:id', 'networks').orgId, uuidArg('id', args.id)),
      networkMembers: async (_s, args: ConnectionArgs & { networkId: string }, g) => {
        const auth = allow(g, '/v1/networks/:id/members', 'network members')
        const scope = `gql:network-members:${uuidArg('networkId', args.networkId)}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await listMembers(g.ctx.sql, auth, args.networkId, page), presentMember)
      },
      networkAgents: async (_s, args: ConnectionArgs & { networkId: string; q?: string; skill?: string }, g) => {
        const auth = allow(g, '/v1/networks/:id/agents', 'network directories')
        const scope = `gql:network-agents:${uuidArg('networkId', args.networkId)}:${JSON.stringify([args.q ?? null, args.skill ?? null])}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await discoverAgents(g.ctx.sql, auth, args.networkId, { q: args.q, skill: args.skill }, page), presentDiscovered)
      },
      publishedAgents: async (_s, _a, g) =>
        (await listPublished(g.ctx.sql, allow(g, '/v1/published-agents', 'published agents').orgId)).map(r => presentPublished(g.ctx.config, r)),
      contacts: async (_s, args: ConnectionArgs & { ownerAddress?: string; q?: string; tag?: string }, g) => {
        const auth = allow(g, '/v1/contacts', 'contacts')
        const filter = { owner_address: args.ownerAddress, q: args.q, tag: args.tag }
        const scope = `gql:contacts?${JSON.stringify([args.ownerAddress?.toLowerCase() ?? null, args.q ?? null, args.tag ?? null])}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await listContacts(g.ctx.sql, auth, filter, page), presentContact)
      },
      contact: async (_s, args: { id: string }, g) =>
        presentContact(await getContact(g.ctx.sql, allow(g, '/v1/contacts/:id', 'contacts'), uuidArg('id', args.id))),
      addressNotes: async (_s, args: ConnectionArgs & { address?: string }, g) => {
        const auth = allow(g, '/v1/address-notes', 'address notes')
        const scope = `gql:address-notes?${JSON.stringify([args.address?.trim().toLowerCase() ?? null])}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await listNotes(g.ctx.sql, auth, { address: args.address }, page), presentNote)
      },
      addressNote: async (_s, args: { id: string }, g) =>
        presentNote(await getNote(g.ctx.sql, allow(g, '/v1/address-notes/:id', 'address notes'), uuidArg('id', args.id))),
    },
  },
}
