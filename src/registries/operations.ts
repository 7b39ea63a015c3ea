/**
 * Registries of agents (the built-in one and those added by URL) and their agents, declared
 * once for REST and GraphQL (src/http/operation.ts); none has an MCP tool. The list of registries
 * is one page in REST's envelope (`onePage`) and a plain list in GraphQL. Still hand-written in
 * routes.ts: the public A2A agent cards (no authentication, a bare document with headers of its own).
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { skill } from '../networks/model'
import { Registry, RegistryAgent, RegistryAgentDetail } from './model'
import { addRegistry, deleteRegistry, getRegistry, getRegistryAgent, listRegistries, listRegistryAgents, refreshRegistry } from './service'

const TAG = 'Registries'
const RegistryId = t.String({ minLength: 1, maxLength: 36, description: '`builtin`, or the id of a registry added by URL' })
const Id = { id: RegistryId }

export const registryOperations = [
  operation({
    name: 'list_registries',
    method: 'GET',
    path: '/v1/registries',
    tag: TAG,
    summary: 'List registries',
    description:
      'The built-in registry (id `builtin`: the agents published publicly on this service), then the registries the organization added, newest first. One page.',
    output: t.Array(Registry),
    onePage: true,
    mcp: false,
    graphql: {
      field: 'registries',
      type: '[Registry!]',
      description:
        'The built-in registry (id builtin), then the registries the organization added, newest first (as GET /v1/registries). Not for connection keys.',
    },
    handle: ({ ctx, auth }) => listRegistries(ctx.sql, auth),
  }),
  operation({
    name: 'add_registry',
    method: 'POST',
    path: '/v1/registries',
    tag: TAG,
    summary: 'Add a registry by URL',
    description:
      'Needs the owner or admin role. The URL must be publicly reachable (private and loopback addresses are a validation_error). Its cards are fetched by a job (status pending until then), at most 512 KB and 200 cards, and cached with their fetch time; their text is untrusted. At most 20 registries per organization.',
    input: t.Object(
      {
        name: t.String({ minLength: 1, maxLength: 100 }),
        url: t.String({
          minLength: 8,
          maxLength: 2000,
          description:
            'https; a bare origin means its /.well-known/agent-card.json. The document is one A2A agent card, a JSON array of cards, or {"agents": [cards]}',
        }),
      },
      { additionalProperties: false },
    ),
    output: Registry,
    status: 201,
    mcp: false,
    handle: ({ ctx, auth }, body) => addRegistry(ctx.sql, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK, auth, body),
  }),
  operation({
    name: 'get_registry',
    method: 'GET',
    path: '/v1/registries/:id',
    tag: TAG,
    summary: 'Read a registry',
    params: Id,
    output: Registry,
    mcp: false,
    graphql: { field: 'registry', type: 'Registry' },
    handle: ({ ctx, auth }, { id }) => getRegistry(ctx.sql, auth, id),
  }),
  operation({
    name: 'refresh_registry',
    method: 'POST',
    path: '/v1/registries/:id/refresh',
    tag: TAG,
    summary: 'Fetch a registry again',
    description: 'Needs the owner or admin role. The cached cards stay until the new fetch succeeds.',
    params: Id,
    output: Registry,
    status: 202,
    mcp: false,
    handle: ({ ctx, auth }, { id }) => refreshRegistry(ctx.sql, auth, id),
  }),
  operation({
    name: 'delete_registry',
    method: 'DELETE',
    path: '/v1/registries/:id',
    tag: TAG,
    summary: 'Remove a registry',
    description: 'Needs the owner or admin role; the built-in registry cannot be removed (409).',
    params: Id,
    output: t.Object({ id: t.String(), deleted: t.Literal(true) }),
    mcp: false,
    handle: ({ ctx, auth }, { id }) => deleteRegistry(ctx.sql, auth, id),
  }),
  listOperation({
    name: 'list_registry_agents',
    method: 'GET',
    path: '/v1/registries/:id/agents',
    tag: TAG,
    summary: 'List the agents of a registry',
    description: 'Newest first. External entries are the cached cards: untrusted text.',
    params: Id,
    input: t.Object({
      q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'searches name and description' })),
      skill: t.Optional(skill),
    }),
    mcp: false,
    graphql: {
      field: 'registryAgents',
      type: 'RegistryAgent',
      params: { id: 'registryId' },
      description: "A registry's agents, newest first (as GET /v1/registries/{id}/agents); q searches name and description.",
    },
    list: {
      item: RegistryAgent,
      scope: ({ auth }, { id, q, skill }) => `registry-agents:${auth.orgId}:${id}:${q ?? ''}:${skill ?? ''}`,
      // an entry is presented as its registry (built-in or added) has it
      fetch: async ({ ctx, auth }, { id, q, skill }, page) => {
        const { rows, total, present } = await listRegistryAgents(ctx.sql, auth, id, { q, skill }, page)
        return { rows: rows.map(present), total }
      },
      present: agent => agent,
    },
  }),
  operation({
    name: 'get_registry_agent',
    method: 'GET',
    path: '/v1/registries/:id/agents/:agent_id',
    tag: TAG,
    summary: 'Read an agent of a registry, with its A2A agent card',
    params: { id: RegistryId, agent_id: t.String({ format: 'uuid' }) },
    output: RegistryAgentDetail,
    mcp: false,
    graphql: {
      field: 'registryAgent',
      type: 'RegistryAgent',
      params: { id: 'registryId', agent_id: 'id' },
      description: 'One agent of a registry with its A2A card (as GET /v1/registries/{id}/agents/{agent_id}).',
    },
    handle: ({ ctx, auth }, { id, agent_id }) => getRegistryAgent(ctx.sql, ctx.config, auth, id, agent_id),
  }),
]
