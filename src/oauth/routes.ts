/**
 * The OAuth 2.1 authorization server on {auth_url}: metadata, dynamic registration, the
 * authorization page, the token and revocation endpoints. All public. Handlers return
 * Responses of their own (OAuth JSON errors, HTML pages), so the v1 envelope never wraps them;
 * form bodies are read as text and parsed here, not validated by Elysia.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { Bare } from '../http/envelope'
import { requestFacts } from '../request-context'
import { authorizePage, authorizeSubmit } from './authorize'
import { registerEndpoint } from './clients'
import { READ_SCOPE, SCOPE } from './constants'
import { authorizationServerMetadata } from './metadata'
import { CORS, formRequestBody } from './responses'
import { revokeEndpoint } from './revoke'
import { tokenEndpoint } from './token'
import { OAuthError, TokenSet, Registration } from './model'

const str = (description: string) => ({ type: 'string' as const, description })

// Repeated parameters arrive as arrays, so the handler can refuse them as OAuth errors (the
// app's shared query hook would answer them with the v1 envelope).
const param = (description: string) => t.Optional(t.Union([t.String(), t.Array(t.String())], { description }))
const AuthorizeQuery = t.Object(
  {
    response_type: param('code'),
    client_id: param('the registered client'),
    redirect_uri: param('exactly one of the registered redirect URIs'),
    code_challenge: param('BASE64URL(SHA-256(code_verifier))'),
    code_challenge_method: param('S256 (plain is refused)'),
    state: param('returned unchanged'),
    scope: param(`${SCOPE} (default), or ${READ_SCOPE} with the MCP resource`),
    resource: param('RFC 8707: {auth_url}/v1 (the default) or {auth_url}/mcp; the tokens are good for that resource only'),
  },
  { additionalProperties: true },
)

const preflight = () =>
  new Response(null, {
    status: 204,
    headers: { ...CORS, 'access-control-allow-methods': 'POST, OPTIONS', 'access-control-allow-headers': 'content-type', 'access-control-max-age': '86400' },
  })

const doc = (summary: string, extra: Record<string, unknown> = {}) => ({ summary, security: [], tags: ['OAuth'], ...extra })

export function oauthRoutes(ctx: AppContext) {
  return (
    new Elysia({ tags: ['OAuth'] })
      // the handlers answer with Responses of their own; the request log line should show their status
      .onAfterHandle(({ request, response }) => {
        if (response instanceof Response) requestFacts(request).status = response.status
      })
      .get(
        '/.well-known/oauth-authorization-server',
        () => Response.json(authorizationServerMetadata(ctx.config), { headers: { ...CORS, 'cache-control': 'public, max-age=300' } }),
        {
          detail: doc('RFC 8414 authorization server metadata'),
        },
      )
      .post('/oauth/register', ({ request, body, server }) => registerEndpoint(ctx, request, body, server), {
        parse: 'text',
        response: { 201: Bare(Registration), 400: Bare(OAuthError) },
        detail: doc('Register a public client (RFC 7591)', {
          description:
            'Redirect URIs: https, or http on localhost, 127.0.0.1 or [::1]; no fragment; 1 to 20. Errors: invalid_redirect_uri, invalid_client_metadata.',
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['redirect_uris'],
                  properties: {
                    client_name: { type: 'string', maxLength: 200 },
                    redirect_uris: { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', format: 'uri' } },
                  },
                },
              },
            },
          },
        }),
      })
      .options('/oauth/register', preflight, { detail: doc('CORS preflight') })
      .get('/oauth/authorize', ({ request, server }) => authorizePage(ctx, request, server), {
        query: AuthorizeQuery,
        detail: doc('Authorization page (HTML sign-in)', {
          description:
            'Shows the sign-in page. An unknown client or a redirect_uri that is not registered gets an error page, never a redirect; other problems redirect with error=invalid_request, unsupported_response_type or invalid_scope.',
        }),
      })
      .post('/oauth/authorize', ({ request, body, server }) => authorizeSubmit(ctx, request, body, server), {
        parse: 'text',
        detail: doc('Sign in and choose an organization (HTML form)', {
          description: 'Answers with the next page, or a 303 to the redirect URI carrying code, state and iss.',
          requestBody: formRequestBody(
            {
              request_id: str('from the page'),
              csrf_token: str('from the page'),
              email: str('the person signing in'),
              password: str('their password'),
              org_id: str('one of their organizations'),
              action: { type: 'string', enum: ['allow', 'deny'] },
            },
            ['request_id', 'csrf_token'],
          ),
        }),
      })
      .post('/oauth/token', ({ request, body, server }) => tokenEndpoint(ctx, request, body, server), {
        parse: 'text',
        response: { 200: Bare(TokenSet), 400: Bare(OAuthError) },
        detail: doc('Token endpoint', {
          description:
            'grant_type authorization_code (PKCE S256) or refresh_token (rotated; reuse revokes the grant). Errors are OAuth bodies: 400 invalid_request, invalid_grant, invalid_scope, unsupported_grant_type, slow_down (with Retry-After, past 60 requests a minute per client address); 401 invalid_client for an unknown client or one sending credentials.',
          requestBody: formRequestBody(
            {
              grant_type: { type: 'string', enum: ['authorization_code', 'refresh_token'] },
              client_id: str('the registered client'),
              code: str('authorization_code: the code from the redirect'),
              redirect_uri: str('authorization_code: the redirect URI of the authorization request'),
              code_verifier: str('authorization_code: 43 to 128 characters of [A-Za-z0-9-._~]'),
              refresh_token: str('refresh_token: the current refresh token'),
              resource: str('optional (RFC 8707): must name the resource the grant is for'),
            },
            ['grant_type', 'client_id'],
          ),
        }),
      })
      .options('/oauth/token', preflight, { detail: doc('CORS preflight') })
      .post('/oauth/revoke', ({ request, body, server }) => revokeEndpoint(ctx, request, body, server), {
        parse: 'text',
        response: { 400: Bare(OAuthError) },
        detail: doc('Revoke a token and its grant (RFC 7009)', {
          description: 'token: an access or refresh token. 200 with an empty body, also for unknown tokens.',
          requestBody: formRequestBody({ token: str('access or refresh token'), token_type_hint: str('ignored'), client_id: str('optional') }, ['token']),
        }),
      })
      .options('/oauth/revoke', preflight, { detail: doc('CORS preflight') })
  )
}
