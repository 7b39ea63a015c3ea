/**
 * The HTTP application: the conventions every route shares (request ids, envelopes, errors,
 * body limits, one log line per request) and the feature plugins. No listen here: tests call
 * `app.handle(request)`, index.ts serves it.
 */
import { Elysia, type AnyElysia } from 'elysia'
import { ValueErrorType } from '@sinclair/typebox/value'
import type { AppContext } from './context'
import { envelope } from './http/envelope'
import { ApiError, errors } from './http/errors'
import { beginRequest, requestFacts } from './http/request-context'
import { fieldName, reasonOf } from './http/validation'
import { log } from './log'
import { accountRoutes } from './account/routes'
import { apiKeyRoutes } from './auth/routes'
import { creditRoutes } from './credits/routes'
import { agentAccountRoutes } from './agent/routes'
import { discoveryRoutes } from './discovery/routes'

type Issue = { path: string; type: number; schema: unknown; message: string }

/** The error envelope for anything thrown while handling a request; never leaks stacks or SQL. */
function toApiError(code: string | number, error: unknown, request: Request, path: string): ApiError {
  if (error instanceof ApiError) return error
  // Elysia wraps anything a parser throws (our 413 included) in a ParseError
  if (code === 'PARSE' && (error as Error).cause instanceof ApiError) return (error as Error).cause as ApiError
  if (code === 'VALIDATION') {
    const v = error as { type: string; all: Issue[] }
    const part = v.type === 'query' ? 'query' : v.type === 'params' ? 'path' : v.type === 'headers' ? 'header' : 'body'
    const issues = v.all.length ? v.all : [{ path: '', type: 0, schema: {}, message: 'is invalid' }]
    // a missing field is reported once, as missing, not also as the wrong type
    const missing = new Set(issues.filter(i => i.type === ValueErrorType.ObjectRequiredProperty).map(i => i.path))
    const relevant = issues.filter(i => !missing.has(i.path) || i.type === ValueErrorType.ObjectRequiredProperty)
    const messages = [...new Set(relevant.map(i => `${fieldName(part, i.path)}: ${reasonOf(i as never)}`))]
    return new ApiError('validation_error', messages.join('; '))
  }
  if (code === 'PARSE') return errors.validation('body', 'is not valid JSON')
  if (code === 'NOT_FOUND') return new ApiError('not_found', `${request.method} ${path}: no such route`)
  return new ApiError('internal_error', 'internal error; the request id identifies it in our logs')
}

export function createApp(ctx: AppContext) {
  const maxBody = ctx.config.MAX_BODY_BYTES
  const tooLarge = () => new ApiError('payload_too_large', `body: must be at most ${maxBody} bytes`)

  const app: AnyElysia = new Elysia({ normalize: false })
    .onRequest(({ request, set }) => {
      const facts = beginRequest(request)
      set.headers['x-request-id'] = facts.id
      const length = Number(request.headers.get('content-length') ?? 0)
      if (length > maxBody) throw tooLarge()
    })
    .onParse({ as: 'global' }, async ({ request, contentType }) => {
      if (!contentType?.startsWith('application/json')) return
      // Read the bytes ourselves: a chunked body has no content-length to check up front.
      const bytes = await request.arrayBuffer()
      if (bytes.byteLength > maxBody) throw tooLarge()
      if (bytes.byteLength === 0) return undefined
      try {
        return JSON.parse(new TextDecoder().decode(bytes))
      } catch {
        throw errors.validation('body', 'is not valid JSON')
      }
    })
    .onError({ as: 'global' }, ({ code, error, request, path, set }) => {
      const facts = requestFacts(request)
      const apiError = toApiError(code, error, request, path)
      if (apiError.status >= 500) log.error('request failed', { request_id: facts.id, path, error })
      facts.status = apiError.status
      const headers = new Headers({ 'content-type': 'application/json', 'x-request-id': facts.id })
      for (const [k, v] of Object.entries(set.headers)) if (typeof v === 'string') headers.set(k, v)
      for (const [k, v] of Object.entries(apiError.headers ?? {})) headers.set(k, v)
      return new Response(JSON.stringify(apiError.toBody()), { status: apiError.status, headers })
    })
    .onAfterHandle({ as: 'global' }, ({ response }) => envelope(response))
    .onAfterResponse({ as: 'global' }, ({ request, set, path }) => {
      const facts = requestFacts(request)
      log.info('request', {
        request_id: facts.id,
        method: request.method,
        path,
        status: facts.status ?? (typeof set.status === 'number' ? set.status : 200),
        duration_ms: Math.round((performance.now() - facts.startedAt) * 100) / 100,
        ...(facts.orgId && { org_id: facts.orgId }),
      })
    })
    .use(discoveryRoutes(ctx, () => app))
    .use(accountRoutes(ctx))
    .use(apiKeyRoutes(ctx))
    .use(creditRoutes(ctx))
    .use(agentAccountRoutes(ctx))
  return app
}

export type App = ReturnType<typeof createApp>
