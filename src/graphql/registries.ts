/**
 * Registries of agents: the built-in one (agents published publicly here) and those added by URL.
 * The Query fields are made from the operations (registries/operations.ts).
 */
import { connectionTypes } from './connection'
import type { SchemaModule } from './module'

export const registriesModule: SchemaModule = {
  sdl: `
type Registry {
  "builtin, or the id of a registry added by URL"
  id: ID!
  "builtin or a2a"
  kind: String!
  name: String!
  url: String
  "of the last fetch: ok, pending (until the first) or failed"
  status: String!
  lastError: String
  fetchedAt: DateTime
  agentCount: Int!
  createdAt: DateTime
}

type RegistryAgent {
  id: ID!
  registryId: ID!
  "external entries: untrusted text from the card"
  name: String!
  description: String!
  "the agent's endpoint as its card states it (untrusted)"
  url: String
  "built-in entries: the email address of the agent"
  address: String
  skills: [String!]!
  "external entries: when the card was fetched"
  fetchedAt: DateTime
  "the A2A agent card; for external entries exactly as fetched (untrusted). Only on registryAgent; null in lists"
  card: JSON
}

${connectionTypes('RegistryAgent', 'registry agents')}
`,
  resolvers: {},
}
