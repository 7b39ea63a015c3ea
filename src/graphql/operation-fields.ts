/**
 * The GraphQL Query fields of declared reads (http/operation.ts): the field's arguments are the
 * operation's path parameters and query fields in camelCase (a list adds `first` and `after`), the
 * resolver calls the operation's handler with them in snake_case, and a list answers a Relay
 * connection. The object types (their fields and relations) stay in the parts' SDL.
 */
import { OptionalKind, type TSchema } from '@sinclair/typebox'
import { ApiError } from '../errors'
import { inputsOf, isList, type Operation, type OperationCall } from '../http/operation'
import { requestFacts } from '../request-context'
import { allow, uuidArg } from './context'
import { CONNECTION_ARGS, connection, keyedPageOf, pageOf, type ConnectionArgs } from './connection'
import type { Resolver, SchemaModule } from './module'

const camel = (name: string) => name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())
const snake = (name: string) => name.replace(/[A-Z]/g, c => `_${c.toLowerCase()}`)

/** The SDL type of an argument: as the operation names it, else from its schema. */
function sdlType(op: Operation, name: string, schema: TSchema): string {
  const named = op.graphql?.args?.[name]
  if (named) return named
  const s = schema as { type?: string; format?: string }
  if (s.format === 'uuid') return 'ID'
  if (s.type === 'integer') return 'Int'
  if (s.type === 'number') return 'Float'
  if (s.type === 'boolean') return 'Boolean'
  if (s.type === 'string') return 'String'
  throw new Error(`graphql: ${op.name}.${name} needs its SDL type in graphql.args`)
}

/** The field's argument of a path parameter: as the operation names it, else its camelCase name. */
const paramArg = (op: Operation, name: string) => op.graphql?.params?.[name] ?? camel(name)

/** The field's own arguments: `graphql.args` entries that are neither path parameters nor inputs. */
const ownArgs = (op: Operation) =>
  Object.entries(op.graphql?.args ?? {}).filter(([name]) => !(name in (op.params ?? {})) && !(name in (op.input?.properties ?? {})))

/** Moves the field's own arguments to `call.extra` (as received, an explicit null too), and adds the `fixed` inputs. */
function fieldArgs(op: Operation, received: Record<string, unknown>, args: Record<string, unknown>, call: OperationCall) {
  const own = ownArgs(op).map(([name]) => name)
  if (own.length) call.extra = Object.fromEntries(own.filter(name => camel(name) in received).map(name => [name, received[camel(name)]]))
  for (const name of own) delete args[name]
  Object.assign(args, op.graphql?.fixed)
}

function argumentsSdl(op: Operation): string {
  const params = Object.entries(op.params ?? {}).map(([name, schema]) => `${paramArg(op, name)}: ${name === 'id' ? 'ID' : sdlType(op, name, schema)}!`)
  const inputs = inputsOf(op, op.graphql?.input)
    .filter(([name]) => !(name in (op.graphql?.fixed ?? {})))
    .map(([name, schema]) => `${camel(name)}: ${sdlType(op, name, schema)}${OptionalKind in schema ? '' : '!'}`)
  const extras = ownArgs(op).map(([name, type]) => `${camel(name)}: ${type}`)
  const all = [...(isList(op) ? [CONNECTION_ARGS] : []), ...params, ...extras, ...inputs]
  return all.length ? `(${all.join(', ')})` : ''
}

/** The operation's arguments from the field's: snake_case names (or the path parameters they name), and ids checked as our UUIDs. */
function argsOf(op: Operation, received: Record<string, unknown>): Record<string, unknown> {
  const params = new Map(Object.keys(op.params ?? {}).map(name => [paramArg(op, name), name]))
  const args: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(received)) {
    if (name === 'first' || name === 'after' || value === null || value === undefined) continue
    args[params.get(name) ?? snake(name)] = value
  }
  // our ids are UUIDs: GraphQL's ID takes any string, so a malformed one is refused here, by its argument's name
  // (an id that is not a UUID, as a registry's `builtin`, is left to the handler)
  const schemas: Record<string, TSchema> = { ...op.params, ...op.input?.properties }
  for (const [name, schema] of Object.entries(schemas)) {
    const isId = (schema as { format?: string }).format === 'uuid'
    const arg = op.params && name in op.params ? paramArg(op, name) : camel(name)
    if (isId && typeof args[name] === 'string') args[name] = uuidArg(arg, args[name] as string)
  }
  return args
}

/** A validation error names the field as GraphQL spells it. */
function camelFields(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.code !== 'validation_error') return error
  const message = error.message.replace(/(^|; )([a-z0-9_]+):/g, (_m, sep: string, field: string) => `${sep}${camel(field)}:`)
  return message === error.message ? error : new ApiError('validation_error', message, error.details)
}

function resolverOf(op: Operation): Resolver {
  const what = op.tag.toLowerCase()
  return async (_source, received: Record<string, unknown> & ConnectionArgs, g) => {
    const auth = allow(g, op.path, what)
    const call: OperationCall = { ctx: g.ctx, auth, signal: g.request.signal, requestId: requestFacts(g.request).id }
    try {
      await op.guard?.(call)
      const args = argsOf(op, received)
      fieldArgs(op, received, args, call)
      if (!isList(op)) return await op.handle(call, args as never)
      const { scope, fetch, present, key, scopeNamesFilters } = op.list
      const prepared = await op.list.prepare?.(call, args as never)
      // the cursor of a list with other filters is refused, as a REST cursor is
      const filters = scopeNamesFilters ? [] : Object.keys(op.input?.properties ?? {}).map(name => args[name] ?? null)
      const listScope = `gql:${await scope(call, args as never)}${filters.some(f => f !== null) ? `?${JSON.stringify(filters)}` : ''}`
      const page = key ? keyedPageOf(g.ctx, listScope, received) : pageOf(g.ctx, listScope, received)
      return connection(g.ctx, listScope, page, (await fetch(call, args as never, page, prepared)) as never, present, key)
    } catch (error) {
      throw camelFields(error)
    }
  }
}

/** The Query fields of every operation that declares one, as a part of the schema. */
export function operationFields(operations: readonly Operation[]): SchemaModule {
  const reads = operations.filter(op => op.graphql)
  for (const op of reads) if (op.method !== 'GET') throw new Error(`graphql: ${op.name} is not a read; the schema has no mutations`)
  const fields = reads.map(op => {
    const { field, type, description } = op.graphql!
    const doc = description ?? `${op.summary} (as ${op.method} ${op.path.replace(/:(\w+)/g, '{$1}')}).`
    return `  ${JSON.stringify(doc)}\n  ${field}${argumentsSdl(op)}: ${isList(op) ? `${type}Connection` : type}`
  })
  return {
    sdl: reads.length ? `extend type Query {\n${fields.join('\n')}\n}\n` : '',
    resolvers: { Query: Object.fromEntries(reads.map(op => [op.graphql!.field, resolverOf(op)])) },
  }
}
