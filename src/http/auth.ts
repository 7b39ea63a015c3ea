/**
 * Access control for routes. A feature's authenticated routes `.use(authenticated(ctx))`, its
 * public ones `.use(publicAccess(ctx))`; both apply the rate limits of the contract: per
 * organization for valid credentials, per client address for everything else (failed
 * authentications included).
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import type { Auth } from '../auth/principal'
import { checkCredentialScope } from './credential-scope'
import { type ApiError, errors } from '../errors'
import { rateLimitError, rateLimitHeaders, rateLimiter } from './rate-limit'
import { clientSocketAddress, requestFacts } from '../request-context'
import { noteWriting } from './read-routing'

export const PUBLIC_PER_MINUTE = 120

/**
 * The credential a bearer token names, or null when it is unknown or revoked: the seam the auth
 * feature plugs into (src/plugins.ts), so the guard knows no kind of credential.
 */
export type CredentialResolver = (ctx: AppContext, token: string) => Promise<Auth | null>

declare module '../context' {
  interface Plugins {
    /** resolves a bearer token to its credential, for every authenticated route */
    readonly resolveCredential: CredentialResolver
  }
}

type Headers = Record<string, string | number | string[]>
interface Server {
  requestIP(req: Request): { address: string } | null
}

export function clientAddress(ctx: AppContext, request: Request, server: Server | null): string {
  if (ctx.config.TRUST_PROXY) {
    const forwarded = request.headers.get('x-forwarded-for')?.split(',')[0]?.trim()
    if (forwarded) return forwarded
  }
  return clientSocketAddress(request) ?? server?.requestIP(request)?.address ?? 'local'
}

/**
 * The Idempotency-Key scope of a public operation: the client address, so that nobody else can
 * replay a response (which may carry a credential) by guessing a key.
 */
export function clientScope(ctx: AppContext, request: Request, server: Server | null, operation: string): string {
  return `ip:${clientAddress(ctx, request, server)}:${operation}`
}

async function limit(ctx: AppContext, set: { headers: Headers }, bucket: string, perMinute: number, what: string) {
  const decision = await rateLimiter(ctx).take(bucket, perMinute)
  if (!decision.allowed) throw rateLimitError(decision, 'rate_limited', what)
  Object.assign(set.headers, rateLimitHeaders(decision))
}

/** The protected-resource metadata document of the REST API (RFC 9728). */
export const apiResourceMetadataUrl = (ctx: AppContext) => `${ctx.config.siteUrl}/.well-known/oauth-protected-resource`

function unauthorized(ctx: AppContext, resourceMetadata: string): ApiError {
  return errors.unauthorized(undefined, `Bearer realm="${new URL(ctx.config.PUBLIC_URL).host}", resource_metadata="${resourceMetadata}"`)
}

export interface BearerOptions {
  /**
   * The RFC 8707 resource an OAuth access token must have been issued for (its audience); a token
   * minted for another resource is refused like an unknown one. Default: this API (`/v1`).
   */
  resource?: string
  /** the protected-resource metadata a 401 points at; default the API's */
  resourceMetadata?: string
  /**
   * Confine connection keys and function runtime keys to what they may call, by the request's own
   * route (default). The MCP endpoint passes false and checks each tool against the REST operation
   * it stands for.
   */
  routeScope?: boolean
  /** the endpoint only reads, whatever the request's method (GraphQL, which serves no mutation): its POSTs are no writes for read routing */
  readOnly?: boolean
}

/** The audience of the REST API: what OAuth tokens issued without a `resource` are for. */
export const apiResource = (ctx: AppContext) => `${ctx.config.PUBLIC_URL}/v1`

/**
 * The organization credential of a request's bearer, rate limited; 401 (counted against the
 * address) without one. Every authenticated route passes here, so this is also where agent
 * connection keys are confined to their allow-list and runtime keys kept from minting credentials
 * (403 forbidden: src/http/credential-scope.ts).
 */
export async function authenticateRequest(
  ctx: AppContext,
  request: Request,
  set: { headers: Headers },
  server: Server | null,
  opts: BearerOptions = {},
): Promise<Auth> {
  const header = request.headers.get('authorization') ?? ''
  const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1]
  let auth = token ? await ctx.plugins.resolveCredential(ctx, token) : null
  if (auth?.method === 'oauth' && (auth.resource ?? apiResource(ctx)) !== (opts.resource ?? apiResource(ctx))) auth = null
  if (!auth) {
    await limit(ctx, set, `ip:${clientAddress(ctx, request, server)}`, PUBLIC_PER_MINUTE, 'client address')
    throw unauthorized(ctx, opts.resourceMetadata ?? apiResourceMetadataUrl(ctx))
  }
  requestFacts(request).orgId = auth.orgId
  await limit(ctx, set, `org:${auth.orgId}`, auth.apiPerMinute, 'organization')
  if (opts.routeScope !== false) checkCredentialScope(auth, request)
  if (!opts.readOnly && request.method !== 'GET' && request.method !== 'HEAD') noteWriting(ctx, auth, request)
  return auth
}

/**
 * For an operation open to anonymous callers that shows more to authenticated ones (GraphQL):
 * null without an Authorization header (rate limited per client address, as public routes),
 * else exactly `authenticateRequest`, so a header with a bad credential is 401 as anywhere.
 */
export async function authenticateOptional(
  ctx: AppContext,
  request: Request,
  set: { headers: Headers },
  server: Server | null,
  opts: BearerOptions = {},
): Promise<Auth | null> {
  if (!request.headers.has('authorization')) {
    await limit(ctx, set, `ip:${clientAddress(ctx, request, server)}`, PUBLIC_PER_MINUTE, 'client address')
    return null
  }
  return authenticateRequest(ctx, request, set, server, opts)
}

// Both run at the transform stage, before body and query validation: a caller without valid
// credentials gets 401 (and is counted against its address) whatever it sent.
export function authenticated(ctx: AppContext) {
  return new Elysia().derive(
    { as: 'scoped' },
    async ({ request, set, server }): Promise<{ auth: Auth }> => ({
      auth: await authenticateRequest(ctx, request, set, server),
    }),
  )
}

export function publicAccess(ctx: AppContext) {
  return new Elysia().onTransform({ as: 'scoped' }, async ({ request, set, server }) => {
    await limit(ctx, set, `ip:${clientAddress(ctx, request, server)}`, PUBLIC_PER_MINUTE, 'client address')
  })
}
