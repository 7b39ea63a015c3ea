/** Registries of agents: the built-in one (agents published publicly here) and those added by URL. */
import { getRegistry, getRegistryAgent, listRegistries, listRegistryAgents } from '../registries/service'
import { allow } from './context'
import { CONNECTION_ARGS, connection, connectionTypes, pageOf, type ConnectionArgs } from './connection'
import type { SchemaModule } from './module'

export const registriesModule: SchemaModule = {
  sdl: `
extend type Query {
  "The built-in registry (id builtin), then the registries the organization added, newest first (as GET /v1/registries). Not for connection keys."
  registries: [Registry!]
  registry(id: ID!): Registry
  "A registry's agents, newest first (as GET /v1/registries/{id}/agents); q searches name and description."
  registryAgents(registryId: ID!, ${CONNECTION_ARGS}, q: String, skill: String): RegistryAgentConnection
  "One agent of a registry with its A2A card (as GET /v1/registries/{id}/agents/{agent_id})."
  registryAgent(registryId: ID!, id: ID!): RegistryAgent
}

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
  resolvers: {
    Query: {
      registries: async (_s, _a, g) => listRegistries(g.ctx.sql, allow(g, '/v1/registries', 'registries')),
      registry: async (_s, args: { id: string }, g) => getRegistry(g.ctx.sql, allow(g, '/v1/registries/:id', 'registries'), args.id),
      registryAgents: async (_s, args: ConnectionArgs & { registryId: string; q?: string; skill?: string }, g) => {
        const auth = allow(g, '/v1/registries/:id/agents', 'registries')
        const scope = `gql:registry-agents:${auth.orgId}:${args.registryId}:${JSON.stringify([args.q ?? null, args.skill ?? null])}`
        const page = pageOf(g.ctx, scope, args)
        const { rows, total, present } = await listRegistryAgents(g.ctx.sql, auth, args.registryId, { q: args.q, skill: args.skill }, page)
        return connection(g.ctx, scope, page, { rows, total }, present)
      },
      registryAgent: async (_s, args: { registryId: string; id: string }, g) =>
        getRegistryAgent(g.ctx.sql, g.ctx.config, allow(g, '/v1/registries/:id/agents/:agent_id', 'registries'), args.registryId, args.id),
    },
  },
}
