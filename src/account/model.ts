/** What the account routes return: the caller's identity, the account, its storage, the webhook secret. */
import { t } from 'elysia'

export const Identity = t.Object({
  org_id: t.String({ format: 'uuid' }),
  user_id: t.Union([t.String({ format: 'uuid' }), t.Null()], { description: 'null for credentials minted without a person (zero-touch agent accounts)' }),
  role: t.Union([t.Literal('owner'), t.Literal('admin'), t.Literal('member')], { description: "the person's current role in the organization" }),
  request_id: t.String({ pattern: '^req_', description: 'also in the X-Request-Id header' }),
  auth_method: t.Union([t.Literal('api_key'), t.Literal('oauth'), t.Literal('connection')], {
    description: 'connection keys are refused here (403), so api_key or oauth',
  }),
  key_id: t.String({ description: 'identifies the credential' }),
})

export const Account = t.Object({
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

export const Storage = t.Object({
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

export const Secret = t.Object({ secret: t.String({ description: 'HMAC key for the Service-Signature header, used as UTF-8' }) })
