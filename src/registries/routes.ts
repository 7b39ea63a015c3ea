/**
 * Registries of agents: the routes still written by hand, the list of registries (one page, with
 * the built-in registry first) and the public A2A agent cards of the agents published on this
 * service. The other registry routes are operations.ts.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated, publicAccess } from '../http/auth'
import { Bare, Page, Paged } from '../http/envelope'
import { errors } from '../errors'
import { Registry } from './model'
import { listRegistries, publicAgentCard } from './service'

export function registryRoutes(ctx: AppContext) {
  const api = new Elysia({ tags: ['Registries'] }).use(authenticated(ctx)).get(
    '/v1/registries',
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
