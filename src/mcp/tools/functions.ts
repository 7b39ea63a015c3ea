/** Function tools (the Functions routes): deploy, read, route, secrets, logs and invocations of hosted functions. */
import { Type } from '@sinclair/typebox'
import { DeployFunction, DeployResult, FullInvocation, Invocation, LogLineSchema, Secret } from '../../functions/model'
import { deleteSecret, listSecrets, putSecret } from '../../functions/secrets'
import { RESERVED_SECRETS, SECRET_VALUE_BYTES } from '../../functions/limits'
import { getInvocation, listInvocations, listLogs, presentInvocation, presentLog } from '../../functions/observe'
import { redeployFunction } from '../../functions/service'
import { PageInput, PageOf, toolPage } from '../schema'
import { READ, tool, WRITE } from '../tool'

const FunctionId = { function_id: Type.String({ format: 'uuid' }) }
/** Secrets live in two scopes, like the two REST collections: one function's, or the organization's (read by every function without its own). */
const SecretScope = {
  function_id: Type.Optional(
    Type.String({
      format: 'uuid',
      description: "the function whose secrets these are; omitted: the organization's, which every function reads unless it has its own of that key",
    }),
  ),
}
const SecretKey = Type.String({ maxLength: 200, description: `^[A-Z_][A-Z0-9_]*$; ${RESERVED_SECRETS.join(', ')} are reserved` })

export const functionTools = [
  tool({
    name: 'redeploy_function',
    title: 'Redeploy a function',
    description: 'Replaces the code of an existing function; the new deployment becomes current if it succeeds.',
    input: Type.Object({ ...FunctionId, code: DeployFunction.properties.code, sourceMap: DeployFunction.properties.sourceMap }),
    output: DeployResult,
    annotations: { ...WRITE, idempotentHint: true, openWorldHint: true },
    rest: { method: 'PUT', path: '/v1/functions/:id' },
    handle: async ({ ctx, auth }, { function_id, ...bundle }) => redeployFunction(ctx, auth.orgId, function_id, bundle),
  }),
  tool({
    name: 'list_function_logs',
    title: 'Read function logs',
    description: 'Captured console output of a function, newest first.',
    input: Type.Object({ ...FunctionId, ...PageInput }),
    output: PageOf(LogLineSchema),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/functions/:id/logs' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `logs:${args.function_id}`
      return toolPage(ctx, scope, args, page => listLogs(ctx.sql, auth.orgId, args.function_id, page), presentLog)
    },
  }),
  tool({
    name: 'list_function_invocations',
    title: 'List function invocations',
    description: 'Runs of a function, newest first, with their outcome (ok, exception, exceeded_*), timing and response status.',
    input: Type.Object({ ...FunctionId, ...PageInput }),
    output: PageOf(Invocation),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/functions/:id/invocations' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `invocations:${args.function_id}`
      return toolPage(ctx, scope, args, page => listInvocations(ctx.sql, auth.orgId, args.function_id, page, {}), presentInvocation)
    },
  }),
  tool({
    name: 'get_function_invocation',
    title: 'Get a function invocation',
    description: 'One run with its exception stack and captured logs.',
    input: Type.Object({ ...FunctionId, invocation_id: Type.String({ format: 'uuid' }) }),
    output: FullInvocation,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/functions/:id/invocations/:invocationId' },
    handle: async ({ ctx, auth }, args) => getInvocation(ctx.sql, auth.orgId, args.function_id, args.invocation_id),
  }),
  tool({
    name: 'list_function_secrets',
    title: 'List secrets',
    description: "Keys and timestamps of a function's secrets, or the organization's; values are never returned.",
    input: Type.Object(SecretScope),
    output: Type.Object({ items: Type.Array(Secret, { description: 'by key' }) }),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/functions/:id/secrets' },
    handle: async ({ ctx, auth }, args) => ({ items: await listSecrets(ctx, auth.orgId, args.function_id ?? null) }),
  }),
  tool({
    name: 'set_function_secret',
    title: 'Set a secret',
    description:
      `Creates or replaces a secret a function reads as env.KEY (values up to ${SECRET_VALUE_BYTES} bytes, sealed at rest, never shown again). ` +
      "A function's own secret overrides the organization's; the change applies from the next invocation, without a redeploy.",
    input: Type.Object({ ...SecretScope, key: SecretKey, value: Type.String() }),
    output: Type.Object({ ...Secret.properties, created: Type.Boolean({ description: 'false when it replaced a value' }) }),
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'PUT', path: '/v1/functions/:id/secrets/:key' },
    handle: async ({ ctx, auth }, args) => putSecret(ctx, auth.orgId, args.function_id ?? null, args.key, args.value),
  }),
  tool({
    name: 'delete_function_secret',
    title: 'Delete a secret',
    description: "Deletes a function's secret, or the organization's (not_found when there is none).",
    input: Type.Object({ ...SecretScope, key: SecretKey }),
    output: Type.Object({ key: Type.String(), deleted: Type.Literal(true) }),
    annotations: { ...WRITE, destructiveHint: true },
    rest: { method: 'DELETE', path: '/v1/functions/:id/secrets/:key' },
    handle: async ({ ctx, auth }, args) => deleteSecret(ctx, auth.orgId, args.function_id ?? null, args.key),
  }),
]
