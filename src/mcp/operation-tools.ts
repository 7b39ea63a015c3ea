/**
 * The MCP tools of declared operations (http/operation.ts). A tool's arguments are the operation's
 * path parameters (an `id` named `<resource>_id`, as a model reads it best), the page of a list
 * (`limit`, `cursor`), and its query or body fields; a list answers `{items, total, limit, cursor}`
 * with the tools' smaller default page.
 */
import { type TObject, type TSchema, Type } from '@sinclair/typebox'
import { hintsOf, inputsOf, isList, pathParams, TOOL_PAGE, type Operation, type OperationCall } from '../http/operation'
import { cursors, type PageRequest } from '../http/pagination'
import { numbersOnly, PageInput, PageOf, pageResult, toolPage } from './schema'
import type { Tool } from './tool'

/** The tool argument of a path parameter: as `mcp.params` names it, `<resource>_id` for `id`, else its own name. */
function argumentOf(op: Operation, param: string): string {
  const named = surface(op)?.params?.[param]
  if (named) return named
  if (param !== 'id') return param
  if (!op.resource) throw new Error(`mcp: ${op.name} has an id in its path but no resource to name the argument after`)
  return `${op.resource}_id`
}

const reportsCreated = (op: Operation) => op.mcp !== false && op.mcp?.reportsCreated === true

/** The output of a tool that reports `created`: the operation's, and whether it made something new. */
const withCreated = (output: TSchema): TObject =>
  Type.Object({ ...(output as TObject).properties, created: Type.Boolean({ description: 'false when an existing one was found (or updated)' }) })

function surface(op: Operation) {
  return op.mcp === false ? undefined : op.mcp
}

/** The tool's input fields: those it takes (`mcp.input`), by its names for them (`mcp.rename`). */
const toolInputs = (op: Operation) =>
  Object.fromEntries(inputsOf(op, surface(op)?.input).map(([name, schema]) => [surface(op)?.rename?.[name] ?? name, schema]))

/** The output of a tool whose operation answers an array (`mcp.items`): an object with the array under `items`. */
const itemsOf = (op: Operation, output: TSchema): TObject => Type.Object({ items: { ...output, description: surface(op)?.items } })

/** The input fields among the arguments as the operation names them: only those the tool takes, renamed back. */
function inputArguments(op: Operation, args: Record<string, unknown>) {
  const rename = surface(op)?.rename ?? {}
  // the tool's own arguments (`mcp.args`) reach the handler whatever REST's input says of them
  const taken = new Set([...inputsOf(op, surface(op)?.input).map(([name]) => name), ...Object.keys(surface(op)?.args?.properties ?? {})])
  for (const name of Object.keys(op.input?.properties ?? {})) if (!taken.has(name) || name in rename) delete args[name]
  for (const [name, renamed] of Object.entries(rename)) {
    if (!(renamed in args)) continue
    args[name] = args[renamed]
    delete args[renamed]
  }
}

/** The tool's own arguments (`mcp.args`) over REST's, adding or replacing, with their `additionalProperties`. */
function withOwnArgs(op: Operation, input: TObject): TObject {
  const own = op.mcp ? op.mcp.args : undefined
  if (!own) return input
  const closed = own.additionalProperties === undefined ? {} : { additionalProperties: own.additionalProperties as boolean }
  return Type.Object({ ...input.properties, ...own.properties }, closed)
}

export function toolOf(op: Operation): Tool {
  const params = pathParams(op.path)
  const renamed = Object.fromEntries(params.map(p => [argumentOf(op, p), op.params![p]!]))
  const items = surface(op)?.items !== undefined
  const output = isList(op) ? null : items ? itemsOf(op, op.output) : op.output
  const description = (op.mcp ? op.mcp.description : undefined) || op.description || op.summary
  return {
    name: op.name,
    title: surface(op)?.title ?? op.summary,
    description,
    // validated as published: a number where REST also takes a numeric string (mcp/schema.ts)
    input: numbersOnly(withOwnArgs(op, Type.Object({ ...renamed, ...(isList(op) ? PageInput : {}), ...toolInputs(op) }))),
    output: isList(op) ? PageOf(op.list.item) : reportsCreated(op) ? withCreated(output!) : ((surface(op)?.output ?? output) as never),
    annotations: hintsOf(op),
    rest: { method: op.method, path: op.path },
    async handle(call: OperationCall, received: Record<string, unknown>) {
      await op.guard?.(call)
      const args: Record<string, unknown> = { ...received }
      inputArguments(op, args)
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
      if (!isList(op) && items) return { items: await op.handle(call, args as never) } as never
      if (!isList(op)) return presented(op, call, await op.handle(call, args as never)) as never
      const { limit, cursor, ...filters } = args as { limit?: number; cursor?: string }
      const { scope, fetch, present, key } = op.list
      const prepared = await op.list.prepare?.(call, filters as never)
      const listScope = await scope(call, filters as never)
      const page = (req: PageRequest) => fetch(call, filters as never, req, prepared)
      if (key) return pageResult(await cursors(call.ctx).readKeyed(listScope, { limit, cursor }, page, present, key, TOOL_PAGE)) as never
      return toolPage(call.ctx, listScope, { limit, cursor }, page as never, present)
    },
  }
}

/** The tool's answer: the handler's, or what `mcp.present` makes of it. */
const presented = (op: Operation, call: OperationCall, answer: unknown) => {
  const present = surface(op)?.present
  return present ? present(call, answer) : answer
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
