/**
 * The deprecated alias /v1/me of /v1/whoami (with its deprecation headers), and the webhook
 * signing secret: written by hand. /v1/whoami and the account's reads are declared in operations.ts.
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { deprecated } from '../http/deprecation'
import { Ok } from '../http/envelope'
import { requestFacts } from '../request-context'
import { readWebhookSecret, rotateWebhookSecret } from './webhook-secret'
import { Identity, Secret } from './model'
import { whoami } from './operations'

export function accountRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1', tags: ['Account'] })
    .use(authenticated(ctx))
    .get('/me', ({ auth, request }) => whoami(auth, requestFacts(request).id), {
      response: { 200: Ok(Identity) },
      ...deprecated(
        { since: new Date('2026-11-01T00:00:00Z'), replacement: 'GET /v1/whoami', link: `${ctx.config.siteUrl}/docs#deprecations` },
        'Who the credential is (deprecated alias of /v1/whoami)',
      ),
    })
    .get(
      '/account/webhook-secret',
      async ({ auth, set }) => {
        set.headers['cache-control'] = 'no-store'
        return { secret: await readWebhookSecret(ctx.sql, ctx.keys, auth.orgId) }
      },
      { response: { 200: Ok(Secret) }, detail: { summary: 'The webhook signing secret', description: 'Generated on first read.' } },
    )
    .post(
      '/account/webhook-secret/rotate',
      async ({ auth, set }) => {
        set.headers['cache-control'] = 'no-store'
        return { secret: await rotateWebhookSecret(ctx, auth.orgId) }
      },
      {
        response: { 200: Ok(Secret) },
        detail: {
          summary: 'Rotate the webhook signing secret',
          description: 'Once per 60 minutes (429 rate_limit_exceeded otherwise). Deliveries are signed with both the new and the previous secret for 24 hours.',
        },
      },
    )
}
