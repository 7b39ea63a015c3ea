/**
 * Agent networks: the route still written by hand. Removing a member takes `block` in the query
 * of its DELETE, which declared operations (operations.ts) do not read.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok } from '../http/envelope'
import { MANAGER } from './operations'
import { removeMember } from './service'

const MemberParams = t.Object({ id: t.String({ format: 'uuid' }), org_id: t.String({ format: 'uuid', description: 'the member organization' }) })

export function networkRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/networks', tags: ['Agent Networks'] })
    .use(authenticated(ctx))
    .delete('/:id/members/:org_id', ({ auth, params, query }) => removeMember(ctx.sql, auth, params.id, params.org_id, { block: query.block }), {
      params: MemberParams,
      query: t.Object({
        block: t.Optional(
          t.Boolean({
            description:
              "with the caller's own org_id: also refuse the network owner organization's invitations from now on (GET /v1/networks/invitation-blocks)",
          }),
        ),
      }),
      response: { 200: Ok(t.Object({ org_id: t.String({ format: 'uuid' }), removed: t.Literal(true) })) },
      detail: {
        summary: 'Remove a member, or leave',
        description: `With another organization's id: ${MANAGER} With the caller's own org_id: leave the network (or decline an invitation), needs an owner or admin of the caller's organization; block=true also blocks the network's owner organization from inviting it again. The owner organization cannot leave (409 conflict) and deletes the network instead.`,
      },
    })
}
