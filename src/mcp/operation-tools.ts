/**
 * The MCP tools of declared operations (http/operation.ts). A tool's arguments are the operation's
 * path parameters (an `id` named `<resource>_id`, as a model reads it best), the page of a list
 * (`limit`, `cursor`), and its query or body fields; a list answers `{items, total, limit, cursor}`
 * with the tools' smaller default page.
 */
import { type TObject, type TProperties, type TSchema, Type } from '@sinclair/typebox'
import { hintsOf, isList, pathParams, type Operation, type OperationCall } from '../http/operation'
import { PageInput, PageOf, toolPage } from './schema'
import type { Tool } from './tool'

/** The tool argument of a path parameter. */
function argumentOf(op: Operation, param: string): string {
  const named = toolOptions(op)?.params?.[param]
  if (named) return named
  if (param !== 'id') return param
  if (!op.resource) throw new Error(`mcp: ${op.name} has an id in its path but no resource to name the argument after`)
  return `${op.resource}_id`
}

const reportsCreated = (op: Operation) => op.mcp !== false && op.mcp?.reportsCreated === true

/** The output of a tool that reports `created`: the operation's, and whether it made something new. */
const withCreated = (output: TSchema): TObject =>
  Type.Object({ ...(output as TObject).properties, created: Type.Boolean({ description: 'false when an existing one was found (or updated)' }) })

/** The input fields a tool publishes (`mcp.input`), with its own schemas where it has them (`mcp.args`). */
function toolInput(op: Operation): TProperties {
  const fields = Object.entries(op.input?.properties ?? {})
  const only = toolOptions(op)?.input
  const chosen = only ? fields.filter(([name]) => only.includes(name)) : fields
  return Object.fromEntries(chosen.map(([name, schema]) => [name, toolSchema(op, name, schema)]))
}

/** The operation's `mcp` options, if it has a tool. */
const toolOptions = (op: Operation) => op.mcp || undefined

const toolSchema = (op: Operation, name: string, schema: TSchema): TSchema => toolOptions(op)?.args?.[name] ?? schema

/** The output of a tool whose operation answers an array (`mcp.items`): an object with the array under `items`. */
const itemsOf = (op: Operation, output: TSchema): TObject => Type.Object({ items: { ...output, description: toolOptions(op)?.items } })

const answersItems = (op: Operation) => toolOptions(op)?.items !== undefined

export function toolOf(op: Operation): Tool {
  const params = pathParams(op.path)
  const renamed = Object.fromEntries(params.map(p => [argumentOf(op, p), toolSchema(op, p, op.params![p]!)]))
  const description = (op.mcp ? op.mcp.description : undefined) || op.description || op.summary
  const inputs = toolInput(op)
  const output = isList(op) ? null : answersItems(op) ? itemsOf(op, op.output) : op.output
  return {
    name: op.name,
    title: toolOptions(op)?.title ?? op.summary,
    description,
    input: Type.Object({ ...renamed, ...(isList(op) ? PageInput : {}), ...inputs }),
    output: isList(op) ? PageOf(op.list.item) : reportsCreated(op) ? withCreated(output!) : (output as never),
    annotations: hintsOf(op),
    rest: { method: op.method, path: op.path },
    async handle(call: OperationCall, received: Record<string, unknown>) {
      await op.guard?.(call)
      const args: Record<string, unknown> = toolOptions(op)?.input
        ? published(received, [...Object.keys(renamed), ...Object.keys(PageInput), ...Object.keys(inputs)])
        : { ...received }
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
      if (!isList(op) && answersItems(op)) return { items: await op.handle(call, args as never) } as never
      if (!isList(op)) return (await op.handle(call, args as never)) as never
      const { limit, cursor, ...filters } = args as { limit?: number; cursor?: string }
      const { scope, fetch, present } = op.list
      return toolPage(call.ctx, scope(call, filters as never), { limit, cursor }, page => fetch(call, filters as never, page) as never, present)
    },
  }
}

/** Only the arguments a tool publishes (`mcp.input`): an input field it leaves out never reaches the handler. */
const published = (received: Record<string, unknown>, names: string[]) => Object.fromEntries(Object.entries(received).filter(([name]) => names.includes(name)))

/** The tools of every operation that has one. */
export const operationTools = (operations: readonly Operation[]): Tool[] => operations.filter(op => op.mcp !== false).map(toolOf)
