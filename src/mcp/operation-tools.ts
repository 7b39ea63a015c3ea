/**
 * The MCP tools of declared operations (http/operation.ts). A tool's arguments are the operation's
 * path parameters (an `id` named `<resource>_id`, as a model reads it best), the page of a list
 * (`limit`, `cursor`), and its query or body fields; a list answers `{items, total, limit, cursor}`
 * with the tools' smaller default page.
 */
import { type TObject, type TSchema, Type } from '@sinclair/typebox'
import { hintsOf, isList, pathParams, type Operation, type OperationCall } from '../http/operation'
import { PageInput, PageOf, toolPage } from './schema'
import type { Tool } from './tool'

/** The tool argument of a path parameter. */
function argumentOf(op: Operation, param: string): string {
  if (param !== 'id') return param
  if (!op.resource) throw new Error(`mcp: ${op.name} has an id in its path but no resource to name the argument after`)
  return `${op.resource}_id`
}

const reportsCreated = (op: Operation) => op.mcp !== false && op.mcp?.reportsCreated === true

/** The output of a tool that reports `created`: the operation's, and whether it made something new. */
const withCreated = (output: TSchema): TObject =>
  Type.Object({ ...(output as TObject).properties, created: Type.Boolean({ description: 'false when an existing one was found (or updated)' }) })

export function toolOf(op: Operation): Tool {
  const params = pathParams(op.path)
  const renamed = Object.fromEntries(params.map(p => [argumentOf(op, p), op.params![p]!]))
  const description = (op.mcp ? op.mcp.description : undefined) || op.description || op.summary
  return {
    name: op.name,
    title: op.summary,
    description,
    input: Type.Object({ ...renamed, ...(isList(op) ? PageInput : {}), ...(op.mcpInput ?? op.input)?.properties }),
    output: isList(op) ? PageOf(op.list.item) : reportsCreated(op) ? withCreated(op.output) : (op.output as never),
    annotations: hintsOf(op),
    rest: { method: op.method, path: op.path },
    async handle(call: OperationCall, received: Record<string, unknown>) {
      await op.guard?.(call)
      const args: Record<string, unknown> = { ...received }
      for (const p of params) {
        const name = argumentOf(op, p)
        if (name !== p) {
          args[p] = args[name]
          delete args[name]
        }
      }
      if (!isList(op) && reportsCreated(op)) {
        let created = true
        const result = await op.handle({ ...call, status: code => void (created = code !== 200) }, args as never)
        return { ...(result as object), created } as never
      }
      if (!isList(op)) return (await op.handle(call, args as never)) as never
      const { limit, cursor, ...filters } = args as { limit?: number; cursor?: string }
      const { scope, fetch, present } = op.list
      return toolPage(call.ctx, scope(call, filters as never), { limit, cursor }, page => fetch(call, filters as never, page) as never, present)
    },
  }
}

/** The tool of an operation that declares `idempotency`: a required `idempotency_key` argument, handed to the handler as `call.idempotencyKey`. */
function withIdempotencyKey(op: Operation, tool: Tool): Tool {
  if (!op.idempotency) return tool
  const key = Type.String({ minLength: 1, maxLength: 255, description: op.idempotency.key })
  return {
    ...tool,
    input: Type.Object({ ...tool.input.properties, idempotency_key: key }),
    handle: (call, { idempotency_key, ...args }) => tool.handle({ ...call, idempotencyKey: idempotency_key } as OperationCall, args),
  }
}

/** The tools of every operation that has one. */
export const operationTools = (operations: readonly Operation[]): Tool[] =>
  operations.filter(op => op.mcp !== false).map(op => withIdempotencyKey(op, toolOf(op)))
