/**
 * The types of agent networks (with their members and directories), published agents, contacts
 * and address notes; their Query fields are made from the operations (networks/, contacts/,
 * notes/operations.ts). A network's members and directory are root fields taking the network's
 * id, as their REST reads are (`/v1/networks/{id}/members`, `/v1/networks/{id}/agents`): each
 * reads one network's list, so no query can make them read per network of a list.
 */
import { connectionTypes } from './connection'
import type { SchemaModule } from './module'

export const networksModule: SchemaModule = {
  sdl: `
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
  resolvers: {},
}
