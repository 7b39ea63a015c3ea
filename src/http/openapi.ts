/**
 * The OpenAPI 3.1 document, generated from the TypeBox schemas the routes validate with, so the
 * description cannot drift from the behaviour. Routes whose `detail.security` is `[]` are public;
 * every other operation needs a bearer credential.
 */
import type { AnyElysia } from 'elysia'
import { OptionalKind } from '@sinclair/typebox'
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from './boundary'
import { ERROR_STATUS } from '../errors'
import { ENVELOPE, ErrorSchema, MEDIA_TYPE } from './envelope'

type Json = Record<string, unknown>
interface RouteLike {
  method: string
  path: string
  hooks: { body?: unknown; query?: unknown; params?: unknown; headers?: unknown; response?: unknown; detail?: Json }
}

/** JSON Schema without TypeBox's symbols and with Elysia's query-string coercions folded back. */
function clean(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(clean)
  if (!schema || typeof schema !== 'object') return schema
  const s = schema as Json
  const variants = s.anyOf as Json[] | undefined
  if (variants?.length === 2) {
    // Elysia validates `t.Integer()` in a query as "integer, or a string that parses as one"
    const coercion = variants.find(v => v.type === 'string' && typeof v.format === 'string' && ['integer', 'numeric', 'boolean'].includes(v.format as string))
    const real = variants.find(v => v !== coercion)
    if (coercion && real) {
      const { anyOf: _drop, ...rest } = s
      return clean({ ...rest, ...real })
    }
  }
  const out: Json = {}
  for (const [k, v] of Object.entries(s)) {
    if (k === '$id' || k === 'error') continue
    // property names are data, not schema keywords: a property called `error` stays
    if (k === 'properties' && v && typeof v === 'object') out[k] = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, clean(p)]))
    else out[k] = clean(v)
  }
  return out
}

/** The documented body of a response: the payload schema inside the success envelope. */
function enveloped(schema: Json): unknown {
  const kind = schema[ENVELOPE]
  const { [ENVELOPE]: _drop, [MEDIA_TYPE]: _type, ...payload } = clean(schema) as Json
  if (kind === 'none') return payload
  if (kind === 'paged') {
    const props = payload.properties as Json
    return { type: 'object', required: ['success', 'data', 'meta'], properties: { success: { const: true }, data: props.data, meta: props.meta } }
  }
  return { type: 'object', required: ['success', 'data'], properties: { success: { const: true }, data: payload } }
}

function parameters(where: 'query' | 'path' | 'header', schema: unknown): Json[] {
  const s = clean(schema) as Json | undefined
  const props = (s?.properties ?? {}) as Record<string, Json>
  const required = new Set((s?.required as string[]) ?? [])
  return Object.entries(props).map(([name, p]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: p,
    ...(typeof p.description === 'string' && { description: p.description }),
  }))
}

function errorResponses(isPublic: boolean, hasInput: boolean, hasBody: boolean): Json {
  const ref = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
  return {
    ...(hasInput && { '400': { description: 'validation_error: a field failed validation (`field: reason`)', ...ref } }),
    ...(!isPublic && { '401': { description: 'unauthorized: missing or invalid bearer credential', ...ref } }),
    ...(hasBody && {
      '413': { description: 'payload_too_large: the body is over the limit of this operation (x-max-body-bytes, else the default)', ...ref },
      '415': { description: 'unsupported_media_type: the body is not application/json', ...ref },
    }),
    '429': { description: 'rate_limited: too many requests; see Retry-After', ...ref },
    '500': { description: 'internal_error', ...ref },
    '503': { description: 'database_unavailable: the database cannot be reached at the moment; see Retry-After', ...ref },
  }
}

const optional = (security: unknown): boolean => Array.isArray(security) && security.some(s => s && typeof s === 'object' && Object.keys(s).length === 0)

export function buildOpenApi(
  app: AnyElysia,
  info: { serverUrl: string; version: string; webhooks?: Record<string, { summary: string; schema: unknown }> },
): Json {
  const paths: Record<string, Record<string, Json>> = {}
  for (const route of app.routes as unknown as RouteLike[]) {
    if (route.method === 'ALL' || route.path.includes('*') || route.hooks.detail?.hide === true) continue
    const path = route.path.replace(/:(\w+)/g, '{$1}').replace(/\/$/, '') || '/'
    const { body, query, params, headers, response, detail = {} } = route.hooks
    const isPublic = Array.isArray(detail.security) && detail.security.length === 0
    const responses: Json = {}
    for (const [status, schema] of Object.entries((response ?? {}) as Record<string, Json>)) {
      responses[status] = {
        description: schema.description ?? (Number(status) < 300 ? 'success' : 'error'),
        content: { [(schema[MEDIA_TYPE] as string | undefined) ?? 'application/json']: { schema: enveloped(schema) } },
      }
    }
    const { security, ...rest } = detail
    paths[path] ??= {}
    paths[path][route.method.toLowerCase()] = {
      operationId: `${route.method.toLowerCase()}${path.replace(/[{}]/g, '').replace(/[^a-zA-Z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
      ...rest,
      // public: `[]`; an optional credential (`[{}, {bearer: []}]`, GraphQL) as given; else the document's bearer
      ...(isPublic ? { security: [] } : optional(security) ? { security } : {}),
      parameters: [...parameters('path', params), ...parameters('query', query), ...parameters('header', headers)],
      // a body declared t.Optional(...) may be left out entirely
      ...(body
        ? { requestBody: { required: !(body as Record<symbol, unknown>)[OptionalKind], content: { 'application/json': { schema: clean(body) } } } }
        : {}),
      responses: { ...errorResponses(isPublic, Boolean(body || query || params), Boolean(body)), ...responses },
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent mail service',
      version: info.version,
      description:
        'Email infrastructure for AI agents. Every response is an envelope: `{success: true, data, meta?}` or `{success: false, error: {code, message, details?, gates?}}`. ' +
        `Request bodies are JSON (415 otherwise), nested at most ${MAX_JSON_DEPTH} levels and holding at most ${MAX_JSON_VALUES} values unless the operation says more (x-max-json-values), within the operation's x-max-body-bytes (default: the MAX_BODY_BYTES setting); no string, query parameter or header may contain NUL or an unpaired UTF-16 surrogate (400 naming the field). A known path called with another method answers 405 method_not_allowed with Allow. ` +
        `Error codes: ${Object.entries(ERROR_STATUS)
          .map(([c, s]) => `${c} (${s})`)
          .join(', ')}.`,
    },
    servers: [{ url: info.serverUrl }],
    webhooks: Object.fromEntries(
      Object.entries(info.webhooks ?? {}).map(([name, w]) => [
        name,
        {
          post: {
            summary: w.summary,
            requestBody: { required: true, content: { 'application/json': { schema: clean(w.schema) } } },
            responses: { '200': { description: 'any 2xx accepts the event' } },
          },
        },
      ]),
    ),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (svc_...), an OAuth access token (svc_oat_...) or an agent connection key (conn_...)',
        },
      },
      schemas: { Error: clean(ErrorSchema) },
    },
  }
}
