/**
 * The deprecated alias /v1/me of /v1/whoami, written by hand for its deprecation headers.
 * /v1/whoami, the account's reads and the webhook secret are declared in operations.ts.
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { deprecated } from '../http/deprecation'
import { Ok } from '../http/envelope'
import { requestFacts } from '../request-context'
import { Identity } from './model'
import { whoami } from './operations'

export function accountRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1', tags: ['Account'] }).use(authenticated(ctx)).get('/me', ({ auth, request }) => whoami(auth, requestFacts(request).id), {
    response: { 200: Ok(Identity) },
    ...deprecated(
      { since: new Date('2026-11-01T00:00:00Z'), replacement: 'GET /v1/whoami', link: `${ctx.config.siteUrl}/docs#deprecations` },
      'Who the credential is (deprecated alias of /v1/whoami)',
    ),
  })
}
