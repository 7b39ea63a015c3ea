/** The OAuth objects the authorization server returns (RFC 6749, RFC 7591). */
import { t } from 'elysia'
import { READ_SCOPE, SCOPE } from './constants'

export const OAuthError = t.Object(
  { error: t.String({ description: 'RFC 6749 / RFC 7591 error code' }), error_description: t.String() },
  { description: 'an OAuth error; never the v1 envelope' },
)

export const TokenSet = t.Object({
  access_token: t.String({ pattern: '^svc_oat_', description: 'valid for 1 hour' }),
  token_type: t.Literal('Bearer'),
  expires_in: t.Integer({ description: 'seconds (3600)' }),
  refresh_token: t.String({ description: 'single use, valid for 90 days; exchanging it revokes it' }),
  scope: t.Union([t.Literal(SCOPE), t.Literal(READ_SCOPE)], { description: 'service:api, or service:read (read-only MCP tools) when only that was asked for' }),
})

export const Registration = t.Object({
  client_id: t.String(),
  client_id_issued_at: t.Integer({ description: 'unix seconds' }),
  client_name: t.Optional(t.String()),
  redirect_uris: t.Array(t.String()),
  grant_types: t.Array(t.String()),
  response_types: t.Array(t.String()),
  token_endpoint_auth_method: t.Literal('none'),
  scope: t.String(),
})
