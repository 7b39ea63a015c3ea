/** Identity and account reads, and the webhook signing secret. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { deprecated } from '../http/deprecation'
import { Ok } from '../http/envelope'
import { requestFacts } from '../http/request-context'
import { getAccount, getStorage } from './service'
import { readWebhookSecret, rotateWebhookSecret } from './webhook-secret'
import type { Auth } from '../auth/principal'

const Identity = t.Object({
  org_id: t.String({ format: 'uuid' }),
  user_id: t.Union([t.String({ format: 'uuid' }), t.Null()], { description: 'null for credentials minted without a person (zero-touch agent accounts)' }),
  role: t.Union([t.Literal('owner'), t.Literal('admin'), t.Literal('member')], { description: "the person's current role in the organization" }),
  request_id: t.String({ pattern: '^req_', description: 'also in the X-Request-Id header' }),
  auth_method: t.Union([t.Literal('api_key'), t.Literal('oauth'), t.Literal('connection')], { description: 'connection keys are refused here (403), so api_key or oauth' }),
  key_id: t.String({ description: 'identifies the credential' }),
})

const Account = t.Object({
  plan: t.String(),
  entitlements: t.Array(t.String()),
  limits: t.Object({
    storage_mb: t.Integer(),
    send_per_hour: t.Integer(),
    send_per_day: t.Integer(),
    api_per_minute: t.Integer(),
    webhooks_max_global: t.Union([t.Integer(), t.Null()], { description: 'null = unlimited' }),
    webhooks_per_domain: t.Boolean(),
    filters_per_domain: t.Boolean(),
    spam_thresholds_per_domain: t.Boolean(),
    memory_keys_max: t.Integer({ description: 'memory keys per organization, both scopes together' }),
    memory_storage_mb: t.Integer({ description: 'bytes of memory values and metadata per organization' }),
    memory_value_max_kb: t.Integer({ description: 'largest memory value (serialized JSON)' }),
  }),
})

const Storage = t.Object({
  used_bytes: t.Integer(),
  used_kb: t.Number(),
  used_mb: t.Number(),
  included_mb: t.Integer({ description: 'storage included in the plan (an allowance)' }),
  limit_mb: t.Union([t.Integer(), t.Null()], { description: 'usage at which inbound mail is refused; null on paid plans' }),
  overage_mb: t.Number(),
  quota_mb: t.Integer({ deprecated: true, description: 'equals included_mb; kept for older clients, not a limit' }),
  percentage: t.Number({ description: 'usage as a percentage of the allowance; can exceed 100' }),
  emails_count: t.Integer(),
})

const Secret = t.Object({ secret: t.String({ description: 'HMAC key for the Service-Signature header, used as UTF-8' }) })

const whoami = (auth: Auth, request: Request) => ({
  org_id: auth.orgId,
  user_id: auth.userId,
  role: auth.role,
  request_id: requestFacts(request).id,
  auth_method: auth.method,
  key_id: auth.keyId,
})

export function accountRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1', tags: ['Account'] })
    .use(authenticated(ctx))
    .get('/whoami', ({ auth, request }) => whoami(auth, request), {
      response: { 200: Ok(Identity) },
      detail: { summary: 'Who the credential is' },
    })
    .get('/me', ({ auth, request }) => whoami(auth, request), {
      response: { 200: Ok(Identity) },
      ...deprecated(
        { since: new Date('2026-11-01T00:00:00Z'), replacement: 'GET /v1/whoami', link: `${ctx.config.siteUrl}/docs#deprecations` },
        'Who the credential is (deprecated alias of /v1/whoami)',
      ),
    })
    .get('/account', ({ auth }) => getAccount(ctx.sql, auth.orgId), {
      response: { 200: Ok(Account) },
      detail: { summary: 'Plan, entitlements and limits' },
    })
    .get('/account/storage', ({ auth }) => getStorage(ctx.sql, auth.orgId), {
      response: { 200: Ok(Storage) },
      detail: { summary: 'Stored-mail usage' },
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
