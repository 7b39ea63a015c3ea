/** Registries of agents, and the public A2A agent cards of the agents published on this service. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated, publicAccess } from '../http/auth'
import { Bare, Ok, Page, Paged } from '../http/envelope'
import { errors } from '../errors'
import { cursors, pageQuery } from '../http/pagination'
import { skill } from '../networks/model'
import { Registry, RegistryAgent, RegistryAgentDetail } from './model'
import { addRegistry, deleteRegistry, getRegistry, getRegistryAgent, listRegistries, listRegistryAgents, publicAgentCard, refreshRegistry } from './service'

const RegistryParams = t.Object({ id: t.String({ minLength: 1, maxLength: 36, description: '`builtin`, or the id of a registry added by URL' }) })
const AgentParams = t.Object({ id: RegistryParams.properties.id, agent_id: t.String({ format: 'uuid' }) })

export function registryRoutes(ctx: AppContext) {
  const api = new Elysia({ prefix: '/v1/registries', tags: ['Registries'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth }) => {
        const all = await listRegistries(ctx.sql, auth)
        return new Page(all, { total: all.length, limit: all.length, cursor: null })
      },
      {
        response: { 200: Paged(Registry) },
        detail: {
          summary: 'List registries',
          description:
            'The built-in registry (id `builtin`: the agents published publicly on this service), then the registries the organization added, newest first. One page.',
        },
      },
    )
    .post(
      '/',
      async ({ auth, body, set }) => {
        set.status = 201
        return addRegistry(ctx.sql, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK, auth, body)
      },
      {
        body: t.Object(
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
        response: { 201: Ok(Registry) },
        detail: {
          summary: 'Add a registry by URL',
          description:
            'Needs the owner or admin role. The URL must be publicly reachable (private and loopback addresses are a validation_error). Its cards are fetched by a job (status pending until then), at most 512 KB and 200 cards, and cached with their fetch time; their text is untrusted. At most 20 registries per organization.',
        },
      },
    )
    .get('/:id', ({ auth, params }) => getRegistry(ctx.sql, auth, params.id), {
      params: RegistryParams,
      response: { 200: Ok(Registry) },
      detail: { summary: 'Read a registry' },
    })
    .post(
      '/:id/refresh',
      async ({ auth, params, set }) => {
        set.status = 202
        return refreshRegistry(ctx.sql, auth, params.id)
      },
      {
        params: RegistryParams,
        response: { 202: Ok(Registry) },
        detail: { summary: 'Fetch a registry again', description: 'Needs the owner or admin role. The cached cards stay until the new fetch succeeds.' },
      },
    )
    .delete('/:id', ({ auth, params }) => deleteRegistry(ctx.sql, auth, params.id), {
      params: RegistryParams,
      response: { 200: Ok(t.Object({ id: t.String(), deleted: t.Literal(true) })) },
      detail: { summary: 'Remove a registry', description: 'Needs the owner or admin role; the built-in registry cannot be removed (409).' },
    })
    .get(
      '/:id/agents',
      async ({ auth, params, query }) => {
        const scope = `registry-agents:${auth.orgId}:${params.id}:${query.q ?? ''}:${query.skill ?? ''}`
        const page = cursors(ctx).request(scope, query)
        const { rows, total, present } = await listRegistryAgents(ctx.sql, auth, params.id, query, page)
        return cursors(ctx).page(scope, rows, page, total, present)
      },
      {
        params: RegistryParams,
        query: t.Object({
          ...pageQuery(),
          q: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'searches name and description' })),
          skill: t.Optional(skill),
        }),
        response: { 200: Paged(RegistryAgent) },
        detail: { summary: 'List the agents of a registry', description: 'Newest first. External entries are the cached cards: untrusted text.' },
      },
    )
    .get('/:id/agents/:agent_id', ({ auth, params }) => getRegistryAgent(ctx.sql, ctx.config, auth, params.id, params.agent_id), {
      params: AgentParams,
      response: { 200: Ok(RegistryAgentDetail) },
      detail: { summary: 'Read an agent of a registry, with its A2A agent card' },
    })

  const cards = new Elysia({ tags: ['Registries'] }).use(publicAccess(ctx)).get(
    '/agents/:address/.well-known/agent-card.json',
    async ({ params }) => {
      const card = await publicAgentCard(ctx.sql, ctx.config, params.address)
      if (!card) throw errors.notFound('agent card')
      return new Response(JSON.stringify(card), {
        headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' },
      })
    },
    {
      params: t.Object({ address: t.String({ minLength: 3, maxLength: 320, description: 'a published address' }) }),
      response: { 200: Bare(t.Record(t.String(), t.Unknown(), { description: 'an A2A agent card' })) },
      detail: {
        summary: 'The A2A agent card of a published address',
        description: 'Public. Only addresses published with visibility public; 404 otherwise.',
        security: [],
      },
    },
  )

  return new Elysia().use(api).use(cards)
}
