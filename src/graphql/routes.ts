/**
 * GET and POST /graphql: the read-only GraphQL surface, served with the reference
 * implementation (`graphql`, graphql-js) behind this thin handler, which owns what is ours:
 * the bearer credential (optional: anonymous callers see the schema and apiVersion only), the
 * v1 error codes in `extensions.code`, queries only, depth and cost limits, and batch loading
 * per request. See docs/graphql.md.
 */
import { Elysia, t } from 'elysia'
import {
  execute,
  getOperationAST,
  GraphQLError,
  Kind,
  parse,
  validate,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
} from 'graphql'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { apiResourceMetadataUrl, authenticateOptional } from '../http/auth'
import { bodyLimit } from '../http/boundary'
import { onReadReplica } from '../http/read-routing'
import { isReplicaFailure } from '../db/replica'
import { Bare } from '../http/envelope'
import { errors } from '../errors'
import { requestFacts } from '../request-context'
import { executionErrorJson, requestErrorJson, type GqlErrorJson } from './errors'
import { checkLimits, MAX_COST, MAX_DEPTH, MAX_TOKENS } from './limits'
import { makeLoaders } from './loaders'
import { fieldResolver, graphqlSchema } from './schema'
import type { GqlContext } from './context'

export const GRAPHQL_PATH = '/graphql'
const MAX_QUERY_CHARS = 20_000
const MAX_BODY_BYTES = 64 * 1024

/** What an anonymous caller may select at the root: the schema, and the version. */
const PUBLIC_ROOT_FIELDS = new Set(['__schema', '__type', '__typename', 'apiVersion'])

interface GraphQLParams {
  query: string
  operationName?: string | null
  variables?: Record<string, unknown> | null
}

/** The root fields an operation selects, through fragments. */
function rootFields(operation: OperationDefinitionNode, fragments: Record<string, FragmentDefinitionNode>): string[] {
  const names: string[] = []
  const visit = (set: OperationDefinitionNode['selectionSet'], seen: Set<string>) => {
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) names.push(s.name.value)
      else if (s.kind === Kind.INLINE_FRAGMENT) visit(s.selectionSet, seen)
      else if (fragments[s.name.value] && !seen.has(s.name.value)) visit(fragments[s.name.value]!.selectionSet, new Set([...seen, s.name.value]))
    }
  }
  visit(operation.selectionSet, new Set())
  return names
}

function respond(request: Request, status: number, body: { data?: unknown; errors?: GqlErrorJson[] }): Response {
  requestFacts(request).status = status
  // GraphQL over HTTP: the newer media type when the client accepts it, else plain JSON
  const type = /application\/graphql-response\+json/i.test(request.headers.get('accept') ?? '') ? 'application/graphql-response+json' : 'application/json'
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'private, no-store' } })
}

const requestError = (request: Request, errs: readonly GraphQLError[]) => respond(request, 400, { errors: errs.map(requestErrorJson) })

/** Parses, checks and runs one request. Throws ApiErrors for what is answered as an HTTP error (401). */
async function run(ctx: AppContext, request: Request, auth: Auth | null, params: GraphQLParams): Promise<Response> {
  const schema = graphqlSchema()
  let document: DocumentNode
  try {
    document = parse(params.query, { maxTokens: MAX_TOKENS })
  } catch (error) {
    if (error instanceof GraphQLError) return requestError(request, [error])
    throw error
  }
  // any mutation or subscription in the document, picked or not (the document would not validate either)
  const writing = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && d.operation !== 'query')
  if (writing) throw errors.validation('query', `${writing.operation} operations are not served: /graphql is read-only (change things through the REST API)`)
  const operation = getOperationAST(document, params.operationName ?? undefined)
  const invalid = validate(schema, document, undefined, { maxErrors: 20 })
  if (invalid.length) return requestError(request, invalid)
  if (!operation)
    throw errors.validation(
      'operationName',
      params.operationName ? `names no operation of the document` : 'is required when the document has several operations',
    )
  const fragments = Object.fromEntries(
    document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map(d => [d.name.value, d]),
  )
  if (!auth && rootFields(operation, fragments).some(f => !PUBLIC_ROOT_FIELDS.has(f))) {
    throw errors.unauthorized(
      'authorization: a bearer credential is needed to read data; anonymous callers see the schema and apiVersion only',
      `Bearer realm="${new URL(ctx.config.PUBLIC_URL).host}", resource_metadata="${apiResourceMetadataUrl(ctx)}"`,
    )
  }
  const variables = params.variables ?? {}
  checkLimits(schema, operation, fragments, variables)

  // a read-only endpoint: on the replica when it covers the caller (a resolver's failure for want of it runs the whole query again on the primary)
  const result = await onReadReplica(ctx, auth, request, async ctx => {
    const g: GqlContext = { ctx, auth, request, loaders: makeLoaders(ctx, auth) }
    const result = await execute({
      schema,
      document,
      operationName: params.operationName ?? undefined,
      variableValues: variables,
      contextValue: g,
      fieldResolver,
    })
    const replicaFailure = result.errors?.find(e => isReplicaFailure(e.originalError))
    if (replicaFailure) throw replicaFailure.originalError
    return result
  })
  // no data at all: the variables did not fit the operation, nothing ran
  if (!('data' in result) || result.data === undefined) return requestError(request, result.errors ?? [])
  const requestId = requestFacts(request).id
  return respond(request, 200, {
    data: result.data,
    ...(result.errors?.length && { errors: result.errors.map(e => executionErrorJson(e, request, requestId, ctx.config.siteUrl)) }),
  })
}

const GqlError = t.Object({
  message: t.String(),
  locations: t.Optional(t.Array(t.Object({ line: t.Integer(), column: t.Integer() }))),
  path: t.Optional(t.Array(t.Union([t.String(), t.Integer()]))),
  extensions: t.Object({
    code: t.String({ description: 'the v1 error code: validation_error, unauthorized, forbidden, not_found, feature_disabled, internal_error, ...' }),
    details: t.Optional(t.Record(t.String(), t.Unknown())),
  }),
})
const GqlResponse = (description: string) =>
  Bare(t.Object({ data: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()])), errors: t.Optional(t.Array(GqlError)) }, { description }))
const GqlErrors = (description: string) => Bare(t.Object({ errors: t.Array(GqlError) }, { description }))

const RESPONSES = {
  200: GqlResponse('the result: `data`, with `errors` for the fields that failed (each with its path and extensions.code)'),
  400: GqlErrors(
    `validation_error: the query does not parse or validate, its variables do not fit, it is a mutation or subscription, or it is over the limits (depth ${MAX_DEPTH}, cost ${MAX_COST})`,
  ),
  401: GqlErrors('unauthorized: an invalid bearer credential, or an anonymous query for data (anonymous callers see the schema and apiVersion only)'),
  413: GqlErrors(`payload_too_large: the body is over ${MAX_BODY_BYTES} bytes`),
  415: GqlErrors('unsupported_media_type: the body is not application/json'),
  429: GqlErrors('rate_limited: too many requests; see Retry-After'),
  500: GqlErrors('internal_error'),
  503: GqlErrors('database_unavailable: see Retry-After'),
}

const description =
  'The read-only GraphQL API (apiVersion v1), introspection enabled. Queries only: mutations and subscriptions are refused. ' +
  'Without a credential only the schema (introspection) and `apiVersion` can be read; with one, the same credentials and permissions as the REST API decide what is seen ' +
  '(an agent connection key reads what its REST allow-list permits: the mail of its address, network discovery with can_view, address notes). Connections are Relay-style (`first`, `after`, `pageInfo`). ' +
  `Queries nest at most ${MAX_DEPTH} fields deep and may cost at most ${MAX_COST} (see docs/graphql.md). Errors carry the v1 error code in \`extensions.code\`.`

export function graphqlRoutes(ctx: AppContext) {
  // optional: anonymous, or a bearer credential
  const security: Record<string, string[]>[] = [{}, { bearer: [] }]
  return new Elysia({ tags: ['GraphQL'] })
    .derive({ as: 'scoped' }, async ({ request, set, server }) => ({
      // connection keys are confined field by field (graphql/context.ts `allow`), not by this route
      auth: await authenticateOptional(ctx, request, set, server, { routeScope: false, readOnly: true }),
    }))
    .get(
      GRAPHQL_PATH,
      ({ auth, query, request }) => {
        let variables: Record<string, unknown> | null = null
        if (query.variables) {
          try {
            variables = JSON.parse(query.variables)
          } catch {}
          if (!variables || typeof variables !== 'object' || Array.isArray(variables)) throw errors.validation('variables', 'must be a JSON object')
        }
        return run(ctx, request, auth, { query: query.query, operationName: query.operationName, variables })
      },
      {
        query: t.Object({
          query: t.String({ minLength: 1, maxLength: MAX_QUERY_CHARS, description: 'the GraphQL document' }),
          operationName: t.Optional(t.String({ maxLength: 200 })),
          variables: t.Optional(t.String({ maxLength: MAX_QUERY_CHARS, description: 'a JSON object' })),
        }),
        response: RESPONSES,
        detail: { summary: 'GraphQL query (GET)', description, security },
      },
    )
    .post(GRAPHQL_PATH, ({ auth, body, request }) => run(ctx, request, auth, body), {
      body: t.Object({
        query: t.String({ minLength: 1, maxLength: MAX_QUERY_CHARS, description: 'the GraphQL document' }),
        operationName: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])),
        variables: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()])),
        extensions: t.Optional(t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: 'accepted and ignored' })),
      }),
      response: RESPONSES,
      detail: { summary: 'GraphQL query (POST)', description, security, ...bodyLimit(MAX_BODY_BYTES) },
    })
}
