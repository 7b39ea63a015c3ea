/**
 * Registries of agents: the route still written by hand, the public A2A agent cards of the agents
 * published on this service (no authentication). The other registry routes are operations.ts.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { publicAccess } from '../http/auth'
import { Bare } from '../http/envelope'
import { errors } from '../errors'
import { publicAgentCard } from './service'

export function registryRoutes(ctx: AppContext) {
  return new Elysia({ tags: ['Registries'] }).use(publicAccess(ctx)).get(
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
}
