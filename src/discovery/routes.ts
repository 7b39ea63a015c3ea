/** Public operations: API discovery, health, the OpenAPI document and protected-resource metadata. */
import { Elysia, t, type AnyElysia } from 'elysia'
import pkg from '../../package.json'
import type { AppContext } from '../context'
import { publicAccess } from '../http/auth'
import { Bare, Ok } from '../http/envelope'
import { buildOpenApi } from '../http/openapi'
import { docsRoutes } from './docs'
import { Health, health } from '../http/health'
import { EmailEventSchema } from '../webhooks/payload'
import { EMAIL_EVENT_TYPES } from '../mail/inbound/classify'

const WEBHOOKS = Object.fromEntries(EMAIL_EVENT_TYPES.map(e => [e, { summary: `${e} event delivered to your endpoint`, schema: EmailEventSchema }]))

export function discoveryRoutes(ctx: AppContext, app: () => AnyElysia) {
  const base = ctx.config.PUBLIC_URL
  let openapi: Record<string, unknown> | undefined
  const document = () => (openapi ??= buildOpenApi(app(), { serverUrl: base, version: pkg.version, webhooks: WEBHOOKS }))
  const resourceMetadata = {
    resource: `${base}/v1`,
    authorization_servers: [base],
    bearer_methods_supported: ['header'],
    scopes_supported: ['service:api'],
    resource_documentation: `${ctx.config.siteUrl}/docs`,
  }
  return (
    new Elysia({ tags: ['Discovery'] })
      .use(publicAccess(ctx))
      .get(
        '/v1',
        () => ({
          name: 'agent mail service',
          version: pkg.version,
          api_base_url: `${base}/v1`,
          openapi_url: `${base}/v1/openapi`,
          docs_url: `${ctx.config.siteUrl}/docs`,
          health_url: `${base}/v1/health`,
          graphql_url: `${base}/graphql`,
          oauth_authorization_server: `${base}/.well-known/oauth-authorization-server`,
          oauth_protected_resource: `${ctx.config.siteUrl}/.well-known/oauth-protected-resource`,
          managed_domain: ctx.config.MANAGED_DOMAIN,
        }),
        {
          response: { 200: Ok(t.Record(t.String(), t.String())) },
          detail: { summary: 'API discovery', security: [] },
        },
      )
      .get('/v1/health', () => health(ctx), {
        response: {
          200: Ok(Health),
          503: Bare(
            t.Object(
              { success: t.Literal(false), error: t.Object({ code: t.Literal('database_unavailable'), message: t.String(), details: Health }) },
              { description: 'a dependency is unreachable: the error envelope, with Retry-After; error.details is the health payload and says which' },
            ),
          ),
        },
        detail: { summary: 'Health check', security: [] },
      })
      .use(docsRoutes(ctx, document))
      .get('/v1/openapi', () => Response.json(document()), { detail: { summary: 'The OpenAPI 3.1 document of this API', security: [] } })
      .get('/.well-known/oauth-protected-resource', () => Response.json(resourceMetadata), {
        detail: { summary: 'RFC 9728 protected-resource metadata', security: [] },
      })
      // RFC 9728 section 3.1: clients discovering the resource `${base}/v1` insert the well-known
      // segment before its path; `resource` must equal that identifier exactly
      .get('/.well-known/oauth-protected-resource/v1', () => Response.json(resourceMetadata), {
        detail: { summary: 'RFC 9728 protected-resource metadata of the resource /v1', security: [] },
      })
  )
}
