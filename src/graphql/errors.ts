/**
 * Errors in the GraphQL shape, `{errors: [{message, locations?, path?, extensions: {code}}]}`,
 * where `extensions.code` is the v1 error code (validation_error, unauthorized, forbidden,
 * not_found, ...) and `extensions.details` its details, if any.
 */
import type { GraphQLError } from 'graphql'
import type { ApiError } from '../errors'
import { toApiError } from '../http/render-error'
import { log } from '../log'

export interface GqlErrorJson {
  message: string
  locations?: readonly { line: number; column: number }[]
  path?: readonly (string | number)[]
  extensions: { code: string; details?: Record<string, unknown> }
}

/** The code and details as the v1 envelope has them (docs_url made absolute on `siteUrl`). */
function extensionsOf(e: ApiError, siteUrl: string) {
  const { details } = e.toBody(siteUrl).error
  return { code: e.code, ...(details && { details }) }
}

/** The body of an error answered before or instead of execution (401, 429, 413, a bad body). */
export const graphqlErrorBody = (e: ApiError, siteUrl: string): { errors: GqlErrorJson[] } => ({
  errors: [{ message: e.message, extensions: extensionsOf(e, siteUrl) }],
})

/** A parse, validation or variable error: the caller's request, said as graphql-js says it. */
export const requestErrorJson = (e: GraphQLError): GqlErrorJson => ({
  message: e.message,
  ...(e.locations && { locations: e.locations }),
  extensions: { code: 'validation_error' },
})

/**
 * An error of execution: what a resolver threw (our ApiErrors as they are, a lost database as
 * database_unavailable), anything else an internal_error that leaks nothing.
 */
export function executionErrorJson(e: GraphQLError, request: Request, requestId: string, siteUrl: string): GqlErrorJson {
  const api = toApiError('UNKNOWN', e.originalError ?? e, request, '/graphql')
  if (api.code === 'internal_error') log.error('graphql field failed', { request_id: requestId, path: e.path?.join('.'), error: e.originalError ?? e })
  return {
    message: api.message,
    ...(e.locations && { locations: e.locations }),
    ...(e.path && { path: e.path }),
    extensions: extensionsOf(api, siteUrl),
  }
}
