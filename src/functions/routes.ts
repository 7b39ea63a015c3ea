/** Functions: deploy and manage, routing, secrets. Observability routes are in observe.routes.ts. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { bodyLimit } from '../http/boundary'
import { DEPLOY_BODY_BYTES, CODE_GZIP_BYTES, CODE_RAW_BYTES, SECRET_VALUE_BYTES, SECRETS_PER_SCOPE, SOURCE_MAP_GZIP_BYTES } from './limits'
import {
  DeployFunction,
  DeployResult,
  Deployment,
  FunctionId,
  FunctionSchema,
  RedeployFunction,
  RouteFunction,
  RoutingTopology,
  Secret,
  Source,
  Tags,
} from './model'
import { functionObserveRoutes } from './observe.routes'
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

const MiB = 1024 * 1024
const SIZES =
  `Limits, checked in this order, each a 400 validation_error naming code or sourceMap: raw size ${CODE_RAW_BYTES / MiB} MiB (code and sourceMap), ` +
  `then gzip size ${CODE_GZIP_BYTES / MiB} MiB for code and ${SOURCE_MAP_GZIP_BYTES / MiB} MiB for sourceMap. `
const CHECK =
  'The module is evaluated once in a sandbox: a syntax error, an exception at the top level, a missing default export or a default export without fetch gives a deployment with status failed and deploy_error (name, message, line, column), and the current deployment stays what it was. '

const SecretKeyParam = t.Object({ key: t.String({ maxLength: 200 }) })
const SECRET_RULES = `Keys match ^[A-Z_][A-Z0-9_]*$; SERVICE_API_KEY, SERVICE_WEBHOOK_SECRET and SERVICE_API_BASE_URL are reserved (400 validation_error naming the key). Values are at most ${SECRET_VALUE_BYTES} bytes, sealed at rest and never returned. At most ${SECRETS_PER_SCOPE} secrets per function and per organization. A change applies from the next invocation, without a redeploy.`

function secretRoutes(ctx: AppContext, prefix: string, scopeOf: (params: Record<string, string>) => string | null, tag: string) {
  const params = prefix.includes(':id') ? FunctionId : undefined
  const withKey = params ? t.Composite([FunctionId, SecretKeyParam]) : SecretKeyParam
  return new Elysia({ prefix, tags: [tag] })
    .use(authenticated(ctx))
    .get('/', ({ auth, params }) => listSecrets(ctx, auth.orgId, scopeOf(params as Record<string, string>)), {
      params,
      response: { 200: Ok(t.Array(Secret)) },
      detail: { summary: 'List secrets (keys and timestamps only)', description: SECRET_RULES },
    })
    .post(
      '/',
      async ({ auth, params, body, set }) => {
        const { created, ...secret } = await putSecret(ctx, auth.orgId, scopeOf(params as Record<string, string>), body.key, body.value)
        set.status = created ? 201 : 200
        return secret
      },
      {
        params,
        body: t.Object({ key: t.String({ maxLength: 200 }), value: t.String() }),
        response: { 200: Ok(Secret), 201: Ok(Secret) },
        detail: { summary: 'Set a secret', description: `${SECRET_RULES} 201 when created, 200 when it replaced a value.` },
      },
    )
    .put(
      '/:key',
      async ({ auth, params, body, set }) => {
        const { created, ...secret } = await putSecret(ctx, auth.orgId, scopeOf(params as Record<string, string>), params.key, body.value)
        set.status = created ? 201 : 200
        return secret
      },
      {
        params: withKey,
        body: t.Object({ value: t.String() }),
        response: { 200: Ok(Secret), 201: Ok(Secret) },
        detail: { summary: 'Set a secret by key', description: SECRET_RULES },
      },
    )
    .delete('/:key', ({ auth, params }) => deleteSecret(ctx, auth.orgId, scopeOf(params as Record<string, string>), params.key), {
      params: withKey,
      response: { 200: Ok(t.Object({ key: t.String(), deleted: t.Literal(true) })) },
      detail: { summary: 'Delete a secret' },
    })
}

export function functionRoutes(ctx: AppContext) {
  const manage = new Elysia({ prefix: '/v1/functions', tags: ['Functions'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        set.status = 201
        return deployFunction(ctx, auth.orgId, body)
      },
      {
        body: DeployFunction,
        response: { 201: Ok(DeployResult) },
        detail: {
          ...bodyLimit(DEPLOY_BODY_BYTES),
          summary: 'Deploy a function',
          description:
            'One ESM module whose default export has async fetch(request, env) as code (with an optional sourceMap), or, with the functions_managed_build entitlement (else 403 feature_disabled), source files and the entry to bundle them from (Bun.build, no network; an import outside the uploaded files is 400 validation_error on files). ' +
            SIZES +
            CHECK +
            'The function is created either way (201); deploy_status says whether a deployment is current. A name already used in the organization is 409 conflict. ' +
            'A deployed function receives no mail until it is routed (PUT /v1/functions/{id}/route). ' +
            "A function's own runtime key (SERVICE_API_KEY) cannot create functions (403 forbidden): each has a runtime key that would outlive it.",
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `functions:${auth.orgId}`
        return cursors(ctx).read(scope, query, page => listFunctions(ctx.sql, auth.orgId, page), presentFunction)
      },
      { query: t.Object(pageQuery()), response: { 200: Paged(FunctionSchema) }, detail: { summary: 'List functions, newest first' } },
    )
    .get('/routing-topology', ({ auth }) => routingTopology(ctx.sql, auth.orgId), {
      response: { 200: Ok(RoutingTopology) },
      detail: { summary: 'Functions wired to domains', description: 'Every live function with where its endpoint receives mail.' },
    })
    .get('/:id', async ({ auth, params }) => presentFunction(await getFunction(ctx.sql, auth.orgId, params.id)), {
      params: FunctionId,
      response: { 200: Ok(FunctionSchema) },
      detail: { summary: 'Get a function', description: 'A deleted function is 404.' },
    })
    .put('/:id', ({ auth, params, body }) => redeployFunction(ctx, auth.orgId, params.id, body), {
      params: FunctionId,
      body: RedeployFunction,
      response: { 200: Ok(DeployResult) },
      detail: {
        ...bodyLimit(DEPLOY_BODY_BYTES),
        summary: 'Redeploy a function',
        description: 'A new deployment, current when its check passes. name may be omitted; a different name is 400 (names are immutable). ' + SIZES + CHECK,
      },
    })
    .delete('/:id', ({ auth, params }) => deleteFunction(ctx, auth.orgId, params.id), {
      params: FunctionId,
      response: { 200: Ok(t.Object({ id: t.String({ format: 'uuid' }), deleted: t.Literal(true) })) },
      detail: {
        summary: 'Delete a function',
        description:
          'Deactivates its endpoint (freeing its slot) and the recipient routes to it, revokes its runtime key; its reads are 404 from then on. Its deliveries stay in GET /v1/webhooks/deliveries (not replayable).',
      },
    })
    .patch('/:id/tags', ({ auth, params, body }) => setTags(ctx.sql, auth.orgId, params.id, body.tags), {
      params: FunctionId,
      body: Tags,
      response: { 200: Ok(FunctionSchema) },
      detail: { summary: 'Replace the tags of a function' },
    })
    .get(
      '/:id/deployments',
      async ({ auth, params, query }) => {
        const scope = `deployments:${params.id}`
        return cursors(ctx).read(scope, query, page => listDeployments(ctx.sql, auth.orgId, params.id, page), presentDeployment)
      },
      {
        params: FunctionId,
        query: t.Object(pageQuery()),
        response: { 200: Paged(Deployment) },
        detail: { summary: 'Deployments of a function, newest first' },
      },
    )
    .get('/:id/source', ({ auth, params, query }) => getSource(ctx.sql, auth.orgId, params.id, query.deployment_id), {
      params: FunctionId,
      query: t.Object({ deployment_id: t.Optional(t.String({ format: 'uuid', description: 'default: the current deployment' })) }),
      response: { 200: Ok(Source) },
      detail: { summary: 'Sources of a managed-build deployment', description: '404 for a deployment uploaded as one module.' },
    })
    .put('/:id/route', ({ auth, params, body }) => routeFunction(ctx, auth.orgId, params.id, body.domain_id), {
      params: FunctionId,
      body: RouteFunction,
      response: { 200: Ok(FunctionSchema) },
      detail: {
        summary: 'Route mail to a function',
        description:
          "Creates or moves the function's one kind: function endpoint: to a domain's default slot (needs the webhooks_per_domain entitlement), or to the org-wide fallback (domain_id null, empty rules), which receives mail only for domains with no enabled endpoint of their own. " +
          'A slot held by another enabled endpoint is 409 conflict. A function reached through recipient routes (a route-target endpoint) is 409: delete those routes first.',
      },
    })

  return new Elysia()
    .use(manage)
    .use(functionObserveRoutes(ctx))
    .use(secretRoutes(ctx, '/v1/functions/:id/secrets', p => p.id!, 'Functions'))
    .use(secretRoutes(ctx, '/v1/org/secrets', () => null, 'Functions'))
}
