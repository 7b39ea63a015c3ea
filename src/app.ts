/**
 * The HTTP application: the conventions every route shares (request ids, envelopes, errors,
 * body limits, one log line per request) and the feature plugins. No listen here: tests call
 * `app.handle(request)`, index.ts serves it.
 */
import { Elysia, type AnyElysia } from 'elysia'
import type { AppContext } from './context'
import { envelope, Page } from './http/envelope'
import { MAX_JSON_VALUES, badText, bodyRules, checkParams, parseBody, type BodyRule } from './http/boundary'
import { errors } from './errors'
import { methodsOf } from './http/methods'
import { oauthErrorBody, toApiError } from './http/render-error'
import { beginRequest, requestFacts } from './request-context'
import { log } from './log'
import { accountRoutes } from './account/routes'
import { operationRoutes } from './http/operation-routes'
import { OPERATIONS } from './operations'
import { apiKeyRoutes } from './auth/routes'
import { creditRoutes } from './credits/routes'
import { agentAccountRoutes } from './agent/routes'
import { discoveryRoutes } from './discovery/routes'
import { emailRoutes } from './emails/routes'
import { sendingRoutes } from './sending/routes'
import { draftApprovalRoutes } from './drafts/routes'
import { oauthRoutes } from './oauth/routes'
import { filterRoutes } from './webhooks/filters.routes'
import { recipientRouteRoutes } from './webhooks/recipient-routes.routes'
import { endpointTestRoutes } from './webhooks/test-send'
import { outboxRoutes } from './mail/outbound/outbox.routes'
import { cliLoginRoutes } from './cli/login.routes'
import { cliSignupRoutes } from './cli/signup.routes'
import { agentSignupRoutes } from './agent/signup.routes'
import { connectionRoutes } from './connections/routes'
import { emailX402Routes } from './x402/email/routes'
import { changesRoutes } from './changes/routes'
import { eventStreamRoutes } from './streams/routes'
import { mcpRoutes } from './mcp/routes'
import { stockClientRoutes } from './x402/stock-client.routes'
import { templateRoutes } from './templates/routes'
import { GRAPHQL_PATH, graphqlRoutes } from './graphql/routes'
import { graphqlErrorBody } from './graphql/errors'
import { registryRoutes } from './registries/routes'
import { consoleRoutes } from './console/routes'

export function createApp(ctx: AppContext) {
  const defaultLimit = ctx.config.MAX_BODY_BYTES
  // built on first use: the routes are added below, after these hooks
  let rules: Map<string, BodyRule> | undefined
  let allowed: ((path: string) => string[]) | undefined
  const ruleOf = (method: string, route: string): BodyRule =>
    (rules ??= bodyRules(app, defaultLimit)).get(`${method} ${route}`) ??
    // a route registered for every method (.all: /mcp) has its rule under ALL
    rules.get(`ALL ${route}`) ?? { limit: defaultLimit, maxValues: MAX_JSON_VALUES, ownParser: false }

  // encodeSchema off: a response is checked against its schema, not also run through TypeBox's
  // Encode, which walks and copies the whole value on every response whose schema holds a
  // t.Integer (an Elysia transform whose encode returns the value as it is, like every transform
  // in our response schemas: test/http/envelope-errors.test.ts checks that).
  const app: AnyElysia = new Elysia({ normalize: false, encodeSchema: false })
    .onRequest(({ request, set }) => {
      const facts = beginRequest(request)
      set.headers['x-request-id'] = facts.id
      // (a NUL in a header value never gets this far: the listener's parser answers 400, and
      // `Headers` refuses one, so no Request can carry it)
    })
    // Every body goes through this one parser (returning a value stops Elysia's own): the
    // limit, content type, nesting and string rules of http/boundary.ts.
    .onParse({ as: 'global' }, ({ request, contentType, route }) => parseBody(request, contentType ?? '', ruleOf(request.method, route)))
    .onTransform({ as: 'global' }, ({ request, query, params }) => {
      for (const name in params) {
        const value = (params as Record<string, unknown>)[name]
        const reason = typeof value === 'string' ? badText(value) : null
        if (reason) throw errors.validation(name, reason)
      }
      const at = request.url.indexOf('?')
      if (at < 0) return
      const search = new URLSearchParams(request.url.slice(at + 1))
      checkParams(search, 'query')
      // Elysia keeps the last of a repeated scalar parameter (`?cursor=a&cursor=b`); refuse it
      // instead, unless the route declares the parameter as an array.
      const seen = new Set<string>()
      for (const name of search.keys()) {
        if (seen.has(name) && !Array.isArray((query as Record<string, unknown>)[name])) throw errors.validation(name, 'must be given at most once')
        seen.add(name)
      }
    })
    .onError({ as: 'global' }, ({ code, error, request, path, set }) => {
      const facts = requestFacts(request)
      let apiError = toApiError(code, error, request, path)
      if (code === 'NOT_FOUND') {
        const allow = (allowed ??= methodsOf(app))(path)
        if (allow.length) apiError = errors.methodNotAllowed(request.method, path, allow)
      }
      if (apiError.status >= 500) log.error('request failed', { request_id: facts.id, path, error })
      facts.status = apiError.status
      const headers = new Headers({ 'content-type': 'application/json', 'x-request-id': facts.id })
      for (const [k, v] of Object.entries(set.headers)) if (typeof v === 'string') headers.set(k, v)
      for (const [k, v] of Object.entries(apiError.headers)) headers.set(k, v)
      const body = path.startsWith('/oauth/')
        ? oauthErrorBody(apiError)
        : path === GRAPHQL_PATH
          ? graphqlErrorBody(apiError, ctx.config.siteUrl)
          : apiError.toBody(ctx.config.siteUrl)
      return new Response(JSON.stringify(body), { status: apiError.status, headers })
    })
    // Response validation may hand mapResponse a copy of the value, so note before it whether it was a Page.
    .onAfterHandle({ as: 'global' }, ({ request, response }) => {
      if (response instanceof Page) requestFacts(request).paged = true
    })
    // The envelope's JSON text: Elysia maps a string from this hook as it maps a handler's (one
    // Response with the status and headers of `set`), though its types admit only a Response.
    .mapResponse({ as: 'global' }, ({ request, responseValue, set }) => envelope(responseValue, set, requestFacts(request).paged === true) as Response)
    .onAfterResponse({ as: 'global' }, ({ request, set, path }) => {
      const facts = requestFacts(request)
      const status = facts.status ?? (typeof set.status === 'number' ? set.status : 200)
      const durationMs = Math.round((performance.now() - facts.startedAt) * 100) / 100
      // request_id, method, path, status, duration_ms and org_id when known, written as JSON here
      log.infoJson(
        'request',
        `"request_id":"${facts.id}","method":${JSON.stringify(request.method)},"path":${JSON.stringify(path)},"status":${status},"duration_ms":${durationMs}` +
          (facts.orgId ? `,"org_id":${JSON.stringify(facts.orgId)}` : '') +
          (facts.onReplica ? ',"reads":"replica"' : ''),
      )
      for (const finish of facts.finished ?? []) finish()
    })
    .use(discoveryRoutes(ctx, () => app))
    .use(accountRoutes(ctx))
    .use(apiKeyRoutes(ctx))
    .use(creditRoutes(ctx))
    .use(agentAccountRoutes(ctx))
    .use(operationRoutes(ctx, OPERATIONS))
    .use(emailRoutes(ctx))
    .use(sendingRoutes(ctx))
    .use(draftApprovalRoutes(ctx))
    .use(oauthRoutes(ctx))
    .use(filterRoutes(ctx))
    .use(recipientRouteRoutes(ctx))
    .use(endpointTestRoutes(ctx))
    .use(outboxRoutes(ctx))
    .use(cliLoginRoutes(ctx))
    .use(cliSignupRoutes(ctx))
    .use(agentSignupRoutes(ctx))
    .use(connectionRoutes(ctx))
    .use(emailX402Routes(ctx))
    .use(changesRoutes(ctx))
    .use(eventStreamRoutes(ctx))
    .use(mcpRoutes(ctx))
    .use(stockClientRoutes(ctx))
    .use(templateRoutes(ctx))
    .use(graphqlRoutes(ctx))
    .use(registryRoutes(ctx))
    .use(consoleRoutes(ctx))
  return app
}

export type App = ReturnType<typeof createApp>
