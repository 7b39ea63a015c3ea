/** The schemas of the function routes, shared by the routes, the OpenAPI document and tests. */
import { t } from 'elysia'
import { Nullable, OneOf } from '../http/schema'
import { CODE_GZIP_BYTES, CODE_RAW_BYTES, SOURCE_MAP_GZIP_BYTES, SOURCE_MAP_RAW_BYTES } from './limits'
import { OUTCOMES } from './sandbox/protocol'

const MiB = 1024 * 1024
export const NAME_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$'

export const FunctionId = t.Object({ id: t.String({ format: 'uuid' }) })

const Code = t.String({
  minLength: 1,
  description: `one ESM module whose default export has an async fetch(request, env) method; at most ${CODE_RAW_BYTES / MiB} MiB raw, then ${CODE_GZIP_BYTES / MiB} MiB gzipped`,
})
const SourceMap = t.String({
  description: `optional source map of the module; at most ${SOURCE_MAP_RAW_BYTES / MiB} MiB raw, then ${SOURCE_MAP_GZIP_BYTES / MiB} MiB gzipped`,
})

const Files = t.Record(t.String(), t.String(), {
  description:
    'managed build (needs the functions_managed_build entitlement): source files by relative path, bundled from entry with Bun.build; imports must stay within these files',
})
const Entry = t.String({ minLength: 1, maxLength: 500, description: 'managed build: the file to bundle from' })

export const DeployFunction = t.Object({
  name: t.String({
    pattern: NAME_PATTERN,
    error: 'must be 1 to 64 lowercase letters, digits, - or _, starting with a letter or digit',
    description: 'unique in the organization; immutable',
  }),
  code: t.Optional(Code),
  sourceMap: t.Optional(SourceMap),
  files: t.Optional(Files),
  entry: t.Optional(Entry),
})

export const RedeployFunction = t.Object({
  name: t.Optional(t.String({ description: 'may be omitted; if given it must be the current name (names are immutable)' })),
  code: t.Optional(Code),
  sourceMap: t.Optional(SourceMap),
  files: t.Optional(Files),
  entry: t.Optional(Entry),
})

export const Source = t.Object({
  deployment_id: t.String({ format: 'uuid' }),
  entry: t.String(),
  files: t.Record(t.String(), t.String()),
})

export const DeployError = t.Object({
  name: t.String({ description: 'SyntaxError, TypeError, ...' }),
  message: t.String(),
  line: Nullable(t.Integer({ description: '1-based line in the module, when known' })),
  column: Nullable(t.Integer({ description: '1-based column, when known' })),
})

export const Deployment = t.Object({
  id: t.String({ format: 'uuid' }),
  function_id: t.String({ format: 'uuid' }),
  status: OneOf(['deployed', 'failed'] as const, {
    description: 'deployed: the module evaluated and has a default export with fetch; failed: see deploy_error',
  }),
  deploy_error: Nullable(DeployError),
  build_ms: t.Number({ description: 'time to bundle (managed build), size-check and check the module in a sandbox' }),
  bundle_bytes: t.Integer({ description: 'raw size of the module in bytes' }),
  gzip_bytes: t.Integer(),
  has_source_map: t.Boolean(),
  managed_build: t.Boolean({ description: 'bundled by the service from uploaded files (GET /v1/functions/{id}/source)' }),
  is_current: t.Boolean(),
  created_at: t.String({ format: 'date-time' }),
})

export const FunctionSchema = t.Object({
  id: t.String({ format: 'uuid' }),
  name: t.String(),
  deploy_status: OneOf(['deployed', 'failed'] as const, {
    description: 'deployed: a deployment is current (installed; it receives mail only once routed); failed: no deployment has succeeded yet',
  }),
  current_deployment_id: Nullable(t.String({ format: 'uuid' })),
  tags: t.Array(t.String()),
  endpoint_id: Nullable(t.String({ format: 'uuid', description: 'its kind: function endpoint, once routed' })),
  route: Nullable(t.Object({ domain_id: Nullable(t.String({ format: 'uuid' })), enabled: t.Boolean(), is_route_target: t.Boolean() }), {
    description: 'where its endpoint receives mail: a domain, or the org-wide fallback (domain_id null); null = not routed, receives no mail',
  }),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const DeployResult = t.Composite([FunctionSchema, t.Object({ deployment: Deployment })])

export const Tags = t.Object({
  tags: t.Array(t.String({ minLength: 1, maxLength: 64, pattern: '^[^\\r\\n]*$' }), { maxItems: 20, description: 'replaces the tags; at most 20' }),
})

export const Outcome = OneOf(OUTCOMES)

export const Invocation = t.Object({
  id: t.String({ format: 'uuid' }),
  function_id: t.String({ format: 'uuid' }),
  deployment_id: t.String({ format: 'uuid' }),
  delivery_id: Nullable(t.String({ format: 'uuid' })),
  email_id: Nullable(t.String({ format: 'uuid' })),
  outcome: Outcome,
  cpu_ms: t.Number(),
  wall_ms: t.Number(),
  request_method: t.String(),
  request_url: t.String(),
  response_status: Nullable(t.Integer()),
  exception_name: Nullable(t.String()),
  exception_message: Nullable(t.String()),
  logs_truncated: t.Boolean(),
  subrequests: t.Integer(),
  created_at: t.String({ format: 'date-time' }),
})

export const LogLineSchema = t.Object({
  id: t.String({ format: 'uuid' }),
  invocation_id: t.String({ format: 'uuid' }),
  level: t.String({ description: 'log, info, debug, warn or error' }),
  message: t.String(),
  logged_at: t.String({ format: 'date-time' }),
})

export const FullInvocation = t.Composite([Invocation, t.Object({ exception_stack: Nullable(t.String()), logs: t.Array(LogLineSchema) })])

export const Activity = t.Object({
  id: t.String({ format: 'uuid' }),
  function_id: t.String({ format: 'uuid' }),
  type: OneOf(['email.sent', 'email.replied'] as const),
  email_id: t.String({ format: 'uuid' }),
  delivery_id: Nullable(t.String({ format: 'uuid' })),
  invocation_id: Nullable(t.String({ format: 'uuid' })),
  created_at: t.String({ format: 'date-time' }),
})

/** A secret as the API shows it: never its value. */
export const Secret = t.Object({ key: t.String(), created_at: t.String({ format: 'date-time' }), updated_at: t.String({ format: 'date-time' }) })

export const RouteFunction = t.Object({
  domain_id: t.Union([t.String({ format: 'uuid' }), t.Null()], {
    error: 'must be a domain id (uuid) or null',
    description: 'a domain of the organization, or null for the org-wide fallback',
  }),
})

export const RoutingTopology = t.Object({
  functions: t.Array(
    t.Object({
      function_id: t.String({ format: 'uuid' }),
      name: t.String(),
      endpoint_id: Nullable(t.String({ format: 'uuid' })),
      enabled: t.Boolean(),
      slot: t.String({ description: 'domain (a domain default), fallback (org-wide), route_target (only recipient routes reach it) or none' }),
      domain_id: Nullable(t.String({ format: 'uuid' })),
      domain: Nullable(t.String()),
      recipient_routes: t.Array(t.String({ description: 'patterns of recipient routes to the function' })),
    }),
  ),
})
