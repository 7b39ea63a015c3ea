/**
 * How anything thrown while handling a request becomes the error the client sees: our own
 * ApiErrors as they are, Elysia's validation and parse failures as `validation_error` with
 * `field: reason` messages, unknown routes as `not_found`, and everything else as an
 * `internal_error` that leaks no stack or SQL. /oauth/* answers in the OAuth error shape.
 */
import { isDatabaseUnavailable } from '../db/errors'
import { ApiError, errors } from '../errors'

/** How long a client should wait while the database is unreachable: a restart or failover takes seconds. */
export const DATABASE_RETRY_SECONDS = 5
import { fieldName, reasonOf, validationError } from './validation'

type Issue = { path: string; type: number; schema: unknown; message: string }

/**
 * Elysia checks the range of a coerced query or path number (`?limit=0`) on the property alone
 * and reports it without its name; find the parameter that carried the value.
 */
function coercedName(request: Request, value: unknown): string {
  const url = new URL(request.url)
  const names = [...new Set([...url.searchParams].filter(([, v]) => v !== '' && Number(v) === value).map(([k]) => k))]
  return names.length === 1 ? names[0]! : 'query'
}

/**
 * Elysia decodes a repeated query parameter (`label=a&label=b`, an array) with a transform, and
 * reports an item that fails its schema without the parameter's name: find the parameter that
 * carried the value.
 */
function repeatedName(request: Request, value: unknown): string {
  const names = [...new Set([...new URL(request.url).searchParams].filter(([, v]) => v === value).map(([k]) => k))]
  return names.length === 1 ? names[0]! : 'query'
}

/** RFC 6749 section 5.2: the /oauth/* endpoints answer `{error, error_description}`, never the v1 envelope. */
export function oauthErrorBody(e: ApiError) {
  const error =
    e.status === 429
      ? 'slow_down'
      : e.status === 503
        ? 'temporarily_unavailable'
        : e.status >= 500
          ? 'server_error'
          : e.status === 404
            ? 'not_found'
            : 'invalid_request'
  return { error, error_description: e.message }
}

/** The error envelope for anything thrown while handling a request; never leaks stacks or SQL. */
export function toApiError(code: string | number, error: unknown, request: Request, path: string): ApiError {
  if (error instanceof ApiError) return error
  // Elysia wraps anything a parser throws (our 413 included) in a ParseError
  if (code === 'PARSE' && (error as Error).cause instanceof ApiError) return (error as Error).cause as ApiError
  // A response that fails its own schema is our bug, not the caller's.
  if (code === 'VALIDATION' && (error as { type?: string }).type === 'response') {
    return new ApiError('internal_error', 'internal error; the request id identifies it in our logs')
  }
  if (code === 'VALIDATION') {
    const v = error as { type: string; all: Issue[]; value: unknown }
    const item = (error as { error?: Issue & { value: unknown } }).error
    if (v.type === undefined && item) return errors.validation(`${repeatedName(request, item.value)}${fieldName('', item.path)}`, reasonOf(item as never))
    const part =
      v.type === 'query'
        ? 'query'
        : v.type === 'params'
          ? 'path'
          : v.type === 'headers'
            ? 'header'
            : v.type === 'property'
              ? coercedName(request, v.value)
              : 'body'
    return validationError(part, v.all as never, v.value)
  }
  if (code === 'PARSE') return errors.validation('body', 'is not valid JSON')
  if (code === 'NOT_FOUND') return new ApiError('not_found', `${request.method} ${path}: no such route`)
  if (isDatabaseUnavailable(error)) return errors.retryLater('database_unavailable', 'database: unreachable at the moment', DATABASE_RETRY_SECONDS)
  return new ApiError('internal_error', 'internal error; the request id identifies it in our logs')
}
