/**
 * The REST routes of declared operations (http/operation.ts): the path's parameters, the query of
 * a GET or the JSON body of a write, validated by their TypeBox schemas; the handler's answer in
 * the envelope (a list as a page of `data` with `meta`). Every route is authenticated, and passes
 * the operation's guard (if any) before its request is validated.
 */
import { type TArray, type TObject, Type } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { requestFacts } from '../request-context'
import { authenticated } from './auth'
import { bodyLimit } from './boundary'
import { ENVELOPE, MetaSchema, Ok, Page, Paged } from './envelope'
import { isList, type ListOperation, type Operation, type OperationCall } from './operation'
import { cursors, pageQuery } from './pagination'
import { Nullable } from './schema'

/** The schemas Elysia validates the request with, and documents. */
function requestSchemas(op: Operation) {
  const params = op.params && { params: t.Object(op.params) }
  const input = restInput(op)
  if (op.method !== 'GET' && !op.queryInput) return { ...params, ...headerSchemas(op), ...(input && { body: op.bodyOptional ? t.Optional(input) : input }) }
  if (!isList(op)) return { ...params, ...headerSchemas(op), ...(input && { query: input }) }
  return { ...params, ...headerSchemas(op), query: t.Object({ ...pageQuery(op.list.max, op.list.fallback), ...input?.properties }) }
}

/** The input REST reads from the body or query: the declared one, without the arguments it reads from headers. */
function restInput(op: Operation): TObject | undefined {
  if (!op.headers || !op.input) return op.input
  const rest = Type.Omit(op.input, Object.values(op.headers))
  return Object.keys(rest.properties).length ? rest : undefined
}

/** The request headers arguments are read from (`headers`), documented with the arguments' descriptions. */
function headerSchemas(op: Operation) {
  if (!op.headers) return {}
  const described = (arg: string) => (op.input?.properties[arg] as { description?: string } | undefined)?.description
  const headers = Object.entries(op.headers).map(([header, arg]) => [header, t.Optional(t.String({ ...(described(arg) && { description: described(arg) }) }))])
  return { headers: t.Object(Object.fromEntries(headers)) }
}

/** The arguments read from request headers, as strings (undefined without the header, whatever the body says). */
function headerArgs(op: Operation, request: Request): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(op.headers ?? {}).map(([header, arg]) => [arg, request.headers.get(header) ?? undefined]))
}

/** A list whose REST data is an object (`list.restData`): its items and cursor under their names. */
function restDataSchema(op: ListOperation) {
  const { items, cursor, cursorDescription } = op.list.restData!
  const data = t.Object({ [items]: t.Array(op.list.item), [cursor]: Nullable(t.String({ description: cursorDescription })) })
  return t.Object({ data, meta: MetaSchema }, { [ENVELOPE]: 'paged' })
}

/** The documented answer of a success. */
function responseSchema(op: Operation) {
  if (isList(op)) return op.list.restData ? restDataSchema(op) : Paged(op.list.item)
  return op.onePage ? Paged((op.output as TArray).items) : Ok(op.output)
}

export function operationRoutes(ctx: AppContext, operations: readonly Operation[]) {
  const routes = new Elysia().use(authenticated(ctx))
  for (const op of operations) {
    const status = isList(op) ? 200 : (op.status ?? 200)
    const statuses = !isList(op) && op.mayFindExisting ? [status, 200] : [status]
    routes.route(
      op.method,
      op.path,
      // biome-ignore lint/suspicious/noExplicitAny: the declaration's schemas type the request; Elysia cannot see them through the loop
      async ({ auth, params, query, body, set, request }: any) => {
        const call: OperationCall = {
          ctx,
          auth,
          signal: request.signal,
          status: code => void (set.status = code),
          header: (name, value) => void (set.headers[name] = value),
          requestId: requestFacts(request).id,
        }
        const { limit: _limit, cursor: _cursor, ...filters } = (op.method === 'GET' || op.queryInput ? query : body) ?? {}
        const args = { ...filters, ...headerArgs(op, request), ...params }
        if (op.alternative?.accept.test(request.headers.get('accept') ?? '')) return op.alternative.respond(call, args as never) as never
        set.status = status
        if (!isList(op)) return op.onePage ? onePage(await op.handle(call, args)) : op.handle(call, args)
        const { scope, fetch, present, restData } = op.list
        const page = await cursors(ctx).read(scope(call, args), query, page => fetch(call, args, page) as never, present)
        return restData ? new Page({ [restData.items]: page.data, [restData.cursor]: page.meta.cursor } as never, page.meta) : page
      },
      {
        ...(op.guard && {
          // biome-ignore lint/suspicious/noExplicitAny: `auth` comes from the derive of `authenticated`, which Elysia cannot see here
          transform: async ({ auth, request }: any) => op.guard!({ ctx, auth, signal: request.signal }),
        }),
        ...requestSchemas(op),
        response: Object.fromEntries(statuses.map(code => [code, responseSchema(op)])),
        detail: {
          tags: [op.tag],
          ...(op.bodyLimit && bodyLimit(op.bodyLimit)),
          summary: op.summary,
          ...(op.description && { description: op.description }),
        },
      },
    )
  }
  return routes
}

/** All of a list as one page of the envelope (`onePage`). */
const onePage = (all: unknown) => new Page(all as unknown[], { total: (all as unknown[]).length, limit: (all as unknown[]).length, cursor: null })
