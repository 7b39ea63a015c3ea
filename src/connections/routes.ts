/** Agent connections: invitations (owner or admin), the public claim and setup guide, disconnect. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated, clientScope, publicAccess } from '../http/auth'
import { Ok } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import { claimInvitation, createInvitation, disconnect } from './service'
import { setupGuide } from './setup'
import { credentialCache } from '../auth/credentials'
import { Invitation, Claimed, Guide } from './model'

export function connectionRoutes(ctx: AppContext) {
  const open = new Elysia({ prefix: '/v1/agent-connections', tags: ['Agent connections'] })
    .use(publicAccess(ctx))
    .get(
      '/setup',
      ({ request }) => {
        const guide = setupGuide(ctx.config)
        const accept = request.headers.get('accept') ?? ''
        if (/text\/(plain|markdown)/.test(accept) && !accept.includes('application/json')) {
          return new Response(guide.text, { headers: { 'content-type': 'text/plain;charset=utf-8' } })
        }
        return guide
      },
      { response: { 200: Ok(Guide) }, detail: { summary: 'Setup guide for agent runtimes', security: [] } },
    )
    .post(
      '/claim',
      async ({ body, headers, set, request, server }) => {
        set.headers['cache-control'] = 'no-store'
        const key = idempotencyKeyOf(headers)
        const scope = clientScope(ctx, request, server, 'agent-connections.claim')
        let replaced: string[] = []
        const outcome = await idempotent(ctx.sql, ctx.keys, { scope, key, payload: body }, async tx => {
          const result = await claimInvitation(tx, body.invitation_code)
          replaced = result.replaced
          return { status: 200, data: result.claimed }
        })
        for (const id of replaced) credentialCache(ctx).evict({ keyId: id })
        return applyOutcome(set, key, outcome)
      },
      {
        body: t.Object({ invitation_code: t.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: Ok(Claimed) },
        detail: {
          summary: 'Claim an invitation: returns the connection key, once',
          security: [],
          description:
            'Public. 404 not_found for an unknown, expired or withdrawn invitation; 409 conflict (details.reason invitation_claimed) once it was claimed. Claiming for an address that is already connected revokes the previous key. Accepts Idempotency-Key (scoped to the caller).',
        },
      },
    )

  const managed = new Elysia({ prefix: '/v1/agent-connections', tags: ['Agent connections'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return createInvitation(ctx, auth, body)
      },
      {
        body: t.Object({
          address: t.String({ minLength: 3, maxLength: 320, description: 'a managed inbox of the organization, or an address at one of its verified domains' }),
          label: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
        }),
        response: { 201: Ok(Invitation) },
        detail: {
          summary: 'Invite an agent runtime to one address',
          description:
            'Needs the owner or admin role: an OAuth token of such a person, or an API key created by one (a key without a creator, or a connection key, is 403 forbidden).',
        },
      },
    )
    .delete('/:address', ({ auth, params }) => disconnect(ctx, auth, params.address), {
      params: t.Object({ address: t.String({ minLength: 1, maxLength: 320, description: 'the connected address, exactly' }) }),
      response: {
        200: Ok(t.Object({ address: t.String(), disconnected_at: t.String({ format: 'date-time' }), revoked: t.Array(t.String({ format: 'uuid' })) })),
      },
      detail: {
        summary: 'Disconnect an address',
        description:
          "A connection key may disconnect only its own address (exact match; anything else is 403). An owner or admin may disconnect any of the organization's addresses: the key is revoked and open invitations for it are withdrawn. 404 when nothing is connected.",
      },
    })

  return new Elysia().use(open).use(managed)
}
