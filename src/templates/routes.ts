/**
 * Installing a catalog setup: written by hand, since a retry with the same Idempotency-Key
 * replays the original answer. The other template operations are declared in operations.ts.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf } from '../http/idempotency'
import { install } from './catalog'
import { Install, Installed } from './model'

export function templateRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/templates', tags: ['Templates'] }).use(authenticated(ctx)).post(
    '/install',
    async ({ auth, body, headers, set }) => {
      const key = idempotencyKeyOf(headers)
      return applyOutcome(set, key, await install(ctx, auth.orgId, body, key))
    },
    {
      body: Install,
      headers: t.Object({
        'idempotency-key': t.Optional(t.String({ description: 'a retry with the same key returns the original result without installing again' })),
      }),
      response: { 201: Ok(Installed) },
      detail: {
        summary: 'Install a catalog setup',
        description:
          'Creates every resource of the setup (templates, a function, an endpoint, a recipient route, memories) in one transaction and lists them. Each is created as its own operation would create it, with its rules; ' +
          "if one cannot be (an alias, function name or route pattern in use: 409 conflict; the plan's endpoint limit: 403 feature_disabled; a memory quota: 403 quota_exceeded; an unsafe URL or bad pattern: 400) nothing is. " +
          'A function runtime key (SERVICE_API_KEY) may not install (403 forbidden): a setup may deploy a function, with a credential of its own.',
      },
    },
  )
}
