/**
 * Hosted functions: deploy and manage, routing, observability, secrets; declared once for REST,
 * MCP and GraphQL (src/http/operation.ts). Where the surfaces differ on purpose, the declarations
 * say so: GET /v1/functions/:id/logs answers `{logs, next_cursor}` in its data (`restData`); the
 * tools redeploy_function (code and sourceMap only) and list_function_invocations (no filters)
 * publish some of the input (`mcp.input`); get_function_invocation names its arguments
 * invocation_id and, in GraphQL, `invocation(functionId, id)`; the secret tools serve both
 * collections (a function's, or with no function_id the organization's) and list as `{items}`.
 */
import { t } from 'elysia'
import { listOperation, operation, type OperationCall } from '../http/operation'
import { resourceOperations } from '../http/resource-operations'
import { Nullable, OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { CODE_GZIP_BYTES, CODE_RAW_BYTES, DEPLOY_BODY_BYTES, RESERVED_SECRETS, SECRET_VALUE_BYTES, SECRETS_PER_SCOPE, SOURCE_MAP_GZIP_BYTES } from './limits'
import {
  Activity,
  DeployFunction,
  DeployResult,
  Deployment,
  FullInvocation,
  FunctionSchema,
  Invocation,
  LogLineSchema,
  Outcome,
  RedeployFunction,
  RouteFunction,
  RoutingTopology,
  Secret,
  Source,
  Tags,
} from './model'
import {
  dryRun,
  getInvocation,
  invocationSeries,
  listActivity,
  listInvocations,
  listLogs,
  presentActivity,
  presentInvocation,
  presentLog,
  startTestRun,
  testRunTrace,
  usage,
} from './observe'
import { routeFunction, routingTopology } from './routing'
import { deleteSecret, listSecrets, putSecret } from './secrets'
import {
  deleteFunction,
  deployFunction,
  getFunction,
  getSource,
  listDeployments,
  listFunctions,
  presentDeployment,
  presentFunction,
  redeployFunction,
  setTags,
} from './service'

const TAG = 'Functions'
const Uuid = t.String({ format: 'uuid' })
const Id = { id: Uuid }
const fn = resourceOperations('/v1/functions', { tag: TAG, resource: 'function', output: FunctionSchema, present: presentFunction, type: 'Function' })
const since = (value?: string) => (value ? parseTimestamp('since', value) : undefined)

const MiB = 1024 * 1024
const SIZES =
  `Limits, checked in this order, each a 400 validation_error naming code or sourceMap: raw size ${CODE_RAW_BYTES / MiB} MiB (code and sourceMap), ` +
  `then gzip size ${CODE_GZIP_BYTES / MiB} MiB for code and ${SOURCE_MAP_GZIP_BYTES / MiB} MiB for sourceMap. `
const CHECK =
  'The module is evaluated once in a sandbox: a syntax error, an exception at the top level, a missing default export or a default export without fetch gives a deployment with status failed and deploy_error (name, message, line, column), and the current deployment stays what it was. '

export const functionOperations = [
  operation({
    name: 'deploy_function',
    method: 'POST',
    path: '/v1/functions',
    tag: TAG,
    summary: 'Deploy a function',
    description:
      'One ESM module whose default export has async fetch(request, env) as code (with an optional sourceMap), or, with the functions_managed_build entitlement (else 403 feature_disabled), source files and the entry to bundle them from (Bun.build, no network; an import outside the uploaded files is 400 validation_error on files). ' +
      SIZES +
      CHECK +
      'The function is created either way (201); deploy_status says whether a deployment is current. A name already used in the organization is 409 conflict. ' +
      'A deployed function receives no mail until it is routed (PUT /v1/functions/{id}/route). ' +
      "A function's own runtime key (SERVICE_API_KEY) cannot create functions (403 forbidden): each has a runtime key that would outlive it.",
    input: DeployFunction,
    bodyLimit: DEPLOY_BODY_BYTES,
    output: DeployResult,
    status: 201,
    mcp: {
      description:
        'Creates a hosted function from one ESM module whose default export has async fetch(request, env); it runs on inbound mail once routed. ' +
        'The result says whether the deployment succeeded (deployment.status, deploy_error with line and column). A taken name is a conflict: use redeploy_function.',
      hints: { openWorldHint: true },
    },
    handle: ({ ctx, auth }, body) => deployFunction(ctx, auth.orgId, body),
  }),
  fn.list({
    name: 'list_functions',
    summary: 'List functions, newest first',
    mcp: { description: 'Hosted functions, newest first.' },
    graphql: { field: 'functions', description: 'Live functions, newest first (as GET /v1/functions).' },
    scope: ({ auth }) => `functions:${auth.orgId}`,
    fetch: listFunctions,
  }),
  operation({
    name: 'get_routing_topology',
    method: 'GET',
    path: '/v1/functions/routing-topology',
    tag: TAG,
    summary: 'Functions wired to domains',
    description: 'Every live function with where its endpoint receives mail.',
    output: RoutingTopology,
    mcp: { description: 'Every live function, by name, with where its endpoint receives mail: a domain, the fallback, recipient routes only, or nowhere.' },
    handle: ({ ctx, auth }) => routingTopology(ctx.sql, auth.orgId),
  }),
  fn.get({
    name: 'get_function',
    summary: 'Get a function',
    description: 'A deleted function is 404.',
    mcp: { description: 'One function: its deploy status, current deployment and route.' },
    graphql: 'function',
    find: getFunction,
  }),
  operation({
    name: 'redeploy_function',
    method: 'PUT',
    path: '/v1/functions/:id',
    tag: TAG,
    summary: 'Redeploy a function',
    description: 'A new deployment, current when its check passes. name may be omitted; a different name is 400 (names are immutable). ' + SIZES + CHECK,
    params: Id,
    resource: 'function',
    input: RedeployFunction,
    bodyLimit: DEPLOY_BODY_BYTES,
    output: DeployResult,
    mcp: {
      description: 'Replaces the code of an existing function; the new deployment becomes current if it succeeds.',
      hints: { openWorldHint: true },
      // one module, as deploy_function takes it: no managed build, and no name to restate
      input: ['code', 'sourceMap'],
    },
    handle: ({ ctx, auth }, { id, ...body }) => redeployFunction(ctx, auth.orgId, id, body),
  }),
  operation({
    name: 'delete_function',
    method: 'DELETE',
    path: '/v1/functions/:id',
    tag: TAG,
    summary: 'Delete a function',
    description:
      'Deactivates its endpoint (freeing its slot) and the recipient routes to it, revokes its runtime key; its reads are 404 from then on. Its deliveries stay in GET /v1/webhooks/deliveries (not replayable).',
    params: Id,
    output: t.Object({ id: Uuid, deleted: t.Literal(true) }),
    mcp: false,
    handle: ({ ctx, auth }, { id }) => deleteFunction(ctx, auth.orgId, id),
  }),
  operation({
    name: 'set_function_tags',
    method: 'PATCH',
    path: '/v1/functions/:id/tags',
    tag: TAG,
    summary: 'Replace the tags of a function',
    params: Id,
    input: Tags,
    output: FunctionSchema,
    mcp: false,
    handle: ({ ctx, auth }, { id, tags }) => setTags(ctx.sql, auth.orgId, id, tags),
  }),
  listOperation({
    name: 'list_function_deployments',
    method: 'GET',
    path: '/v1/functions/:id/deployments',
    tag: TAG,
    summary: 'Deployments of a function, newest first',
    params: Id,
    mcp: false,
    list: {
      item: Deployment,
      scope: (_call, { id }) => `deployments:${id}`,
      fetch: ({ ctx, auth }, { id }, page) => listDeployments(ctx.sql, auth.orgId, id, page),
      present: presentDeployment,
    },
  }),
  operation({
    name: 'get_function_source',
    method: 'GET',
    path: '/v1/functions/:id/source',
    tag: TAG,
    summary: 'Sources of a managed-build deployment',
    description: '404 for a deployment uploaded as one module.',
    params: Id,
    input: t.Object({ deployment_id: t.Optional(t.String({ format: 'uuid', description: 'default: the current deployment' })) }),
    output: Source,
    mcp: false,
    handle: ({ ctx, auth }, { id, deployment_id }) => getSource(ctx.sql, auth.orgId, id, deployment_id),
  }),
  operation({
    name: 'route_function',
    method: 'PUT',
    path: '/v1/functions/:id/route',
    tag: TAG,
    summary: 'Route mail to a function',
    description:
      "Creates or moves the function's one kind: function endpoint: to a domain's default slot (needs the webhooks_per_domain entitlement), or to the org-wide fallback (domain_id null, empty rules), which receives mail only for domains with no enabled endpoint of their own. " +
      'A slot held by another enabled endpoint is 409 conflict. A function reached through recipient routes (a route-target endpoint) is 409: delete those routes first.',
    params: Id,
    resource: 'function',
    input: RouteFunction,
    output: FunctionSchema,
    mcp: {
      description:
        "Makes a deployed function receive inbound mail: a domain's default slot (domain_id; needs the webhooks_per_domain entitlement) or the org-wide fallback (domain_id null), " +
        'which receives mail for domains with no enabled endpoint of their own. A slot held by another enabled endpoint is a conflict.',
    },
    handle: ({ ctx, auth }, { id, domain_id }) => routeFunction(ctx, auth.orgId, id, domain_id),
  }),
]

const Usage = t.Object({
  function_id: Nullable(Uuid),
  since: t.String({ format: 'date-time' }),
  invocations: t.Integer(),
  by_outcome: t.Record(t.String(), t.Integer(), { description: 'invocations by outcome' }),
  cpu_ms: t.Number(),
  wall_ms: t.Number(),
  log_lines: t.Integer(),
})
const UsageQuery = t.Object({ since: t.Optional(Timestamp('count from this instant; default 30 days ago')) })

/** Logs, invocations, usage, series, activity, test runs and dry runs. */
export const functionObserveOperations = [
  listOperation({
    name: 'list_function_logs',
    method: 'GET',
    path: '/v1/functions/:id/logs',
    tag: TAG,
    summary: 'Captured console output of a function, newest first',
    description: 'next_cursor (and meta.cursor) is passed back as cursor for the next page.',
    params: Id,
    resource: 'function',
    mcp: { title: 'Read function logs', description: 'Captured console output of a function, newest first.' },
    list: {
      item: LogLineSchema,
      scope: (_call, { id }) => `logs:${id}`,
      fetch: ({ ctx, auth }, { id }, page) => listLogs(ctx.sql, auth.orgId, id, page),
      present: presentLog,
      max: 500,
      fallback: 100,
      // the spec names next_cursor in the data; meta.cursor carries the same value, as in every list
      restData: { items: 'logs', cursor: 'next_cursor', cursorDescription: 'pass as cursor for older lines; also in meta.cursor' },
    },
  }),
  operation({
    name: 'get_functions_usage',
    method: 'GET',
    path: '/v1/functions/usage',
    tag: TAG,
    summary: 'Usage of all functions of the organization',
    input: UsageQuery,
    output: Usage,
    mcp: false,
    handle: ({ ctx, auth }, query) => usage(ctx.sql, auth.orgId, null, since(query.since)),
  }),
  operation({
    name: 'get_function_invocation_series',
    method: 'GET',
    path: '/v1/functions/invocation-series',
    tag: TAG,
    summary: 'Invocations over time',
    description: 'Per bucket, empty buckets included; all functions, or one with function_id.',
    input: t.Object({
      function_id: t.Optional(Uuid),
      since: t.Optional(Timestamp('first bucket; default 30 days ago')),
      bucket: t.Optional(OneOf(['hour', 'day'] as const, { description: 'bucket width; default day' })),
    }),
    output: t.Object({
      function_id: Nullable(Uuid),
      bucket: t.String(),
      since: t.String({ format: 'date-time' }),
      points: t.Array(
        t.Object({ start: t.String({ format: 'date-time' }), invocations: t.Integer(), ok: t.Integer(), failed: t.Integer(), cpu_ms: t.Number() }),
      ),
    }),
    mcp: false,
    handle: ({ ctx, auth }, query) => invocationSeries(ctx.sql, auth.orgId, { functionId: query.function_id, since: since(query.since), bucket: query.bucket }),
  }),
  operation({
    name: 'get_function_usage',
    method: 'GET',
    path: '/v1/functions/:id/usage',
    tag: TAG,
    summary: 'Usage of a function',
    params: Id,
    input: UsageQuery,
    output: Usage,
    mcp: false,
    handle: ({ ctx, auth }, { id, ...query }) => usage(ctx.sql, auth.orgId, id, since(query.since)),
  }),
  listOperation({
    name: 'list_function_invocations',
    method: 'GET',
    path: '/v1/functions/:id/invocations',
    tag: TAG,
    summary: 'Invocations of a function, newest first',
    description:
      'outcome: ok (the function answered; see response_status), exception (it threw, or returned no Response, or its promise could never settle), exceeded_cpu, exceeded_memory (128 MiB), exceeded_wall_clock, exceeded_limit (log bytes, subrequests, response size, stack depth), crashed (the sandbox died; the delivery is retried).',
    params: Id,
    resource: 'function',
    input: t.Object({ outcome: t.Optional(Outcome), since: t.Optional(Timestamp('invocations at or after this instant')) }),
    // the tool has no filters
    mcp: {
      title: 'List function invocations',
      description: 'Runs of a function, newest first, with their outcome (ok, exception, exceeded_*), timing and response status.',
      input: [],
    },
    list: {
      item: Invocation,
      scope: (_call, { id }) => `invocations:${id}`,
      fetch: ({ ctx, auth }, { id, ...query }, page) => listInvocations(ctx.sql, auth.orgId, id, page, { outcome: query.outcome, since: since(query.since) }),
      present: presentInvocation,
    },
  }),
  operation({
    name: 'get_function_invocation',
    method: 'GET',
    path: '/v1/functions/:id/invocations/:invocationId',
    tag: TAG,
    summary: 'One invocation, with its exception stack and captured logs',
    params: { id: Uuid, invocationId: Uuid },
    resource: 'function',
    output: FullInvocation,
    mcp: { title: 'Get a function invocation', description: 'One run with its exception stack and captured logs.', params: { invocationId: 'invocation_id' } },
    graphql: {
      field: 'invocation',
      type: 'Invocation',
      description: 'One invocation of a function, with its exception stack and logs.',
      params: { id: 'functionId', invocationId: 'id' },
    },
    handle: ({ ctx, auth }, { id, invocationId }) => getInvocation(ctx.sql, auth.orgId, id, invocationId),
  }),
  listOperation({
    name: 'list_function_activity',
    method: 'GET',
    path: '/v1/functions/:id/activity',
    tag: TAG,
    summary: 'Outbound effects of a function',
    description:
      'Sends the function made through SERVICE_API_BASE_URL: email.replied (with in_reply_to_email_id) or email.sent, with the sent email_id and the delivery that invoked it.',
    params: Id,
    input: t.Object({
      type: t.Optional(OneOf(['email.sent', 'email.replied'] as const)),
      email_id: t.Optional(Uuid),
      delivery_id: t.Optional(Uuid),
    }),
    mcp: false,
    list: {
      item: Activity,
      scope: (_call, { id }) => `activity:${id}`,
      fetch: ({ ctx, auth }, { id, ...query }, page) =>
        listActivity(ctx.sql, auth.orgId, id, page, { type: query.type, emailId: query.email_id, deliveryId: query.delivery_id }),
      present: presentActivity,
    },
  }),
  operation({
    name: 'test_function',
    method: 'POST',
    path: '/v1/functions/:id/test',
    tag: TAG,
    summary: 'Send a test email to a function',
    description:
      'A real email through the inbound path (parsed, authenticated, stored, routed, delivered as a job) to an address that routes to the function. 409 conflict when no address does (route it first). Follow it with the trace.',
    params: Id,
    output: t.Object({ run_id: Uuid, email_id: Uuid, recipient: t.String(), trace_url: t.String() }),
    mcp: false,
    handle: ({ ctx, auth }, { id }) => startTestRun(ctx, auth.orgId, id),
  }),
  operation({
    name: 'get_function_test_run_trace',
    method: 'GET',
    path: '/v1/functions/:id/test-runs/:runId/trace',
    tag: TAG,
    summary: 'End-to-end trace of a test run',
    description:
      'Each step with its time, in causal order (received, stored, routed, then per invocation: invoked, log lines, outbound sends, outcome; then the delivery status); call again until complete.',
    params: { id: Uuid, runId: Uuid },
    output: t.Object({
      run_id: Uuid,
      email_id: Nullable(Uuid),
      complete: t.Boolean({ description: 'the delivery reached a final status' }),
      steps: t.Array(
        t.Object(
          {
            step: t.String({ description: 'received, stored, routed, invoked, log, outbound, outcome, delivery' }),
            at: t.String({ format: 'date-time' }),
          },
          { additionalProperties: true },
        ),
      ),
    }),
    mcp: false,
    handle: ({ ctx, auth }, { id, runId }) => testRunTrace(ctx.sql, auth.orgId, id, runId),
  }),
  operation({
    name: 'dry_run_function',
    method: 'POST',
    path: '/v1/functions/:id/dry-run',
    tag: TAG,
    summary: 'Run a stored email through a deployment, with no side effects',
    description:
      'Beyond the spec. The function receives the email event as a delivery would carry it (signed; event id evt_dry_...). Sends to SERVICE_API_BASE_URL/send-mail are captured and returned, other API writes are refused (403), reads are served; fetches to other hosts are made for GET and HEAD, and refused (403, not sent) for any other method. Nothing is recorded as a delivery, invocation or log.',
    params: Id,
    input: t.Object({
      email_id: t.String({ format: 'uuid', description: 'a stored email of the organization' }),
      deployment_id: t.Optional(t.String({ format: 'uuid', description: 'default: the current deployment' })),
    }),
    output: t.Object({
      deployment_id: Uuid,
      outcome: Outcome,
      cpu_ms: t.Number(),
      wall_ms: t.Number(),
      response: Nullable(t.Object({ status: t.Integer(), headers: t.Record(t.String(), t.String()), body: t.String() })),
      exception: Nullable(t.Object({ name: t.String(), message: t.String(), stack: Nullable(t.String()) })),
      logs: t.Array(t.Object({ level: t.String(), message: t.String(), at: t.String() })),
      captured_sends: t.Array(t.Unknown(), { description: 'send-mail bodies the function posted: captured, not sent' }),
    }),
    mcp: false,
    handle: ({ ctx, auth }, { id, email_id, deployment_id }) => dryRun(ctx, auth.orgId, id, email_id, deployment_id),
  }),
]

const SECRET_RULES = `Keys match ^[A-Z_][A-Z0-9_]*$; SERVICE_API_KEY, SERVICE_WEBHOOK_SECRET and SERVICE_API_BASE_URL are reserved (400 validation_error naming the key). Values are at most ${SECRET_VALUE_BYTES} bytes, sealed at rest and never returned. At most ${SECRETS_PER_SCOPE} secrets per function and per organization. A change applies from the next invocation, without a redeploy.`
const SecretKey = t.String({ maxLength: 200 })

/**
 * The tools' arguments: the secrets of a function, or with no function_id the organization's (the
 * tools are those of the function's collection, and serve both); the key with its rules.
 */
/** A secret tool's own arguments: the function optional (the organization's without it), and the key where its path has one. */
const secretToolArgs = (withKey: boolean) =>
  t.Object({
    function_id: t.Optional(
      t.String({
        format: 'uuid',
        description: "the function whose secrets these are; omitted: the organization's, which every function reads unless it has its own of that key",
      }),
    ),
    ...(withKey && { key: t.String({ maxLength: 200, description: `^[A-Z_][A-Z0-9_]*$; ${RESERVED_SECRETS.join(', ')} are reserved` }) }),
  })

/** The secret tools, made from the function's collection (none for the organization's, or for POST). */
const SECRET_TOOLS: Record<string, { title: string; description: string; items?: string }> = {
  list_function_secrets: {
    title: 'List secrets',
    description: "Keys and timestamps of a function's secrets, or the organization's; values are never returned.",
    items: 'by key',
  },
  set_function_secret: {
    title: 'Set a secret',
    description:
      `Creates or replaces a secret a function reads as env.KEY (values up to ${SECRET_VALUE_BYTES} bytes, sealed at rest, never shown again). ` +
      "A function's own secret overrides the organization's; the change applies from the next invocation, without a redeploy.",
  },
  delete_function_secret: { title: 'Delete a secret', description: "Deletes a function's secret, or the organization's (not_found when there is none)." },
}

/** The MCP tool of a secret operation, if it has one: it reports `created` where REST answers 201 or 200. */
function secretTool(name: string) {
  const tool = SECRET_TOOLS[name]
  if (!tool) return false as const
  return { ...tool, args: secretToolArgs(!name.startsWith('list_')), ...(name.startsWith('set_') && { reportsCreated: true as const }) }
}

/**
 * The secrets of one scope, a function's (`/v1/functions/:id/secrets`, named `function`) or the
 * organization's (`/v1/org/secrets`, named `org`). The tools of the function's serve both scopes.
 */
function secretOperations(scopeName: 'function' | 'org', prefix: string) {
  const ofFunction = scopeName === 'function'
  // a tool without function_id reads and writes the organization's secrets
  const scopeOf = (args: object) => (ofFunction ? ((args as { id?: string }).id ?? null) : null)
  /** POST and PUT alike: 201 when the secret is new, 200 when it replaced a value. */
  const putAndAnswer = async ({ ctx, auth, status }: OperationCall, args: { key: string; value: string }) => {
    const { created, ...secret } = await putSecret(ctx, auth.orgId, scopeOf(args), args.key, args.value)
    if (!created) status?.(200)
    return secret
  }
  const params = ofFunction ? Id : {}
  const withKey = { ...params, key: SecretKey }
  return [
    operation({
      name: `list_${scopeName}_secrets`,
      method: 'GET',
      path: prefix,
      tag: TAG,
      summary: 'List secrets (keys and timestamps only)',
      description: SECRET_RULES,
      ...(ofFunction && { params, resource: 'function' }),
      output: t.Array(Secret),
      mcp: secretTool(`list_${scopeName}_secrets`),
      handle: ({ ctx, auth }, args) => listSecrets(ctx, auth.orgId, scopeOf(args)),
    }),
    operation({
      name: `create_${scopeName}_secret`,
      method: 'POST',
      path: prefix,
      tag: TAG,
      summary: 'Set a secret',
      description: `${SECRET_RULES} 201 when created, 200 when it replaced a value.`,
      ...(ofFunction && { params, resource: 'function' }),
      input: t.Object({ key: SecretKey, value: t.String() }),
      output: Secret,
      status: 201,
      mayFindExisting: true,
      mcp: secretTool(`create_${scopeName}_secret`),
      handle: putAndAnswer,
    }),
    operation({
      name: `set_${scopeName}_secret`,
      method: 'PUT',
      path: `${prefix}/:key`,
      tag: TAG,
      summary: 'Set a secret by key',
      description: SECRET_RULES,
      params: withKey,
      ...(ofFunction && { resource: 'function' }),
      input: t.Object({ value: t.String() }),
      output: Secret,
      status: 201,
      mayFindExisting: true,
      mcp: secretTool(`set_${scopeName}_secret`),
      handle: putAndAnswer,
    }),
    operation({
      name: `delete_${scopeName}_secret`,
      method: 'DELETE',
      path: `${prefix}/:key`,
      tag: TAG,
      summary: 'Delete a secret',
      params: withKey,
      ...(ofFunction && { resource: 'function' }),
      output: t.Object({ key: t.String(), deleted: t.Literal(true) }),
      mcp: secretTool(`delete_${scopeName}_secret`),
      handle: ({ ctx, auth }, args) => deleteSecret(ctx, auth.orgId, scopeOf(args), args.key),
    }),
  ]
}

export const functionSecretOperations = [...secretOperations('function', '/v1/functions/:id/secrets'), ...secretOperations('org', '/v1/org/secrets')]
