/** Function tools (the Functions routes): deploy, read, logs and invocations of hosted functions. */
import { Type } from '@sinclair/typebox'
import { cursors } from '../../http/pagination'
import { DeployFunction, DeployResult, FullInvocation, FunctionSchema, Invocation, LogLineSchema } from '../../functions/model'
import { getInvocation, listInvocations, listLogs, presentInvocation, presentLog } from '../../functions/observe'
import { deployFunction, getFunction, listFunctions, presentFunction, redeployFunction } from '../../functions/service'
import { PageInput, PageOf, pageResult, TOOL_PAGE } from '../schema'
import { READ, tool, WRITE } from '../tool'

const FunctionId = { function_id: Type.String({ format: 'uuid' }) }

export const functionTools = [
  tool({
    name: 'deploy_function',
    title: 'Deploy a function',
    description:
      'Creates a hosted function from one ESM module whose default export has async fetch(request, env); it runs on inbound mail once routed. ' +
      'The result says whether the deployment succeeded (deployment.status, deploy_error with line and column). A taken name is a conflict: use redeploy_function.',
    input: DeployFunction,
    output: DeployResult,
    annotations: { ...WRITE, openWorldHint: true },
    rest: { method: 'POST', path: '/v1/functions' },
    handle: async ({ ctx, auth }, args) => deployFunction(ctx, auth.orgId, args),
  }),
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
    name: 'list_functions',
    title: 'List functions',
    description: 'Hosted functions, newest first.',
    input: Type.Object(PageInput),
    output: PageOf(FunctionSchema),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/functions' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `functions:${auth.orgId}`
      const page = cursors(ctx).request(scope, args, TOOL_PAGE)
      const { rows, total } = await listFunctions(ctx.sql, auth.orgId, page)
      return pageResult(cursors(ctx).page(scope, rows, page, total, presentFunction))
    },
  }),
  tool({
    name: 'get_function',
    title: 'Get a function',
    description: 'One function: its deploy status, current deployment and route.',
    input: Type.Object(FunctionId),
    output: FunctionSchema,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/functions/:id' },
    handle: async ({ ctx, auth }, args) => presentFunction(await getFunction(ctx.sql, auth.orgId, args.function_id)),
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
      const page = cursors(ctx).request(scope, args, TOOL_PAGE)
      const { rows, total } = await listLogs(ctx.sql, auth.orgId, args.function_id, page)
      return pageResult(cursors(ctx).page(scope, rows, page, total, presentLog))
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
      const page = cursors(ctx).request(scope, args, TOOL_PAGE)
      const { rows, total } = await listInvocations(ctx.sql, auth.orgId, args.function_id, page, {})
      return pageResult(cursors(ctx).page(scope, rows, page, total, presentInvocation))
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
]
