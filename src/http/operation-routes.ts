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
import { bodyLimit, valueLimit } from './boundary'
import { ENVELOPE, MetaSchema, Ok, Page, Paged } from './envelope'
import { idempotencyKeyOf } from './idempotency'
import { isList, type ListOperation, type Operation, type OperationCall } from './operation'
import { cursors, pageQuery } from './pagination'
import { onReadReplica } from './read-routing'
import { Nullable } from './schema'

const ACCEPTED = 'accepted: the action is only started or held (the description says when), not done'

/** The schemas Elysia validates the request with, and documents. */
function requestSchemas(op: Operation) {
  const params = op.params && { params: t.Object(op.params) }
  const input = restInput(op)
  if (op.method !== 'GET' && !op.queryInput) return { ...params, ...(input && { body: bodySchema(op, input) }) }
  if (!isList(op)) return { ...params, ...(input && { query: input }) }
  return { ...params, query: t.Object({ ...pageQuery(op.list.max, op.list.fallback), ...input?.properties }) }
}

/** The input REST reads from the body or query: the declared one, without the fields it reads from headers (`headerArgs`). */
function restInput(op: Operation): TObject | undefined {
  if (!op.headerArgs || !op.input) return op.input
  const rest = Type.Omit(op.input, Object.values(op.headerArgs))
  return Object.keys(rest.properties).length ? rest : undefined
}

/** The body of a write: its input, or the one input field that is the body whole (`bodyField`). */
function bodySchema(op: Operation, input: TObject) {
  const body = op.bodyField ? input.properties[op.bodyField]! : input
  return op.bodyOptional ? t.Optional(body) : body
}

/** The request headers REST validates and documents: declared (`headers`), or those input fields are read from (`headerArgs`). */
function headerSchema(op: Operation) {
  if (op.headers) return { headers: op.headers }
  if (!op.headerArgs) return {}
  const described = (arg: string) => (op.input?.properties[arg] as { description?: string } | undefined)?.description
  const fields = Object.entries(op.headerArgs).map(([header, arg]) => [
    header,
    t.Optional(t.String({ ...(described(arg) && { description: described(arg) }) })),
  ])
  return { headers: t.Object(Object.fromEntries(fields)) }
}

/** The input fields read from request headers (`headerArgs`), as strings (undefined without the header, whatever the body says). */
const headerArgValues = (op: Operation, request: Request) =>
  Object.fromEntries(Object.entries(op.headerArgs ?? {}).map(([header, arg]) => [arg, request.headers.get(header) ?? undefined]))

/** The documented answer of a success: a page, a page whose data is an object (`list.restData`), all in one page (`onePage`), or the payload. */
function responseSchema(op: Operation) {
  if (isList(op)) return op.list.restData ? restDataSchema(op) : Paged(op.list.item)
  return op.onePage ? Paged((op.output as TArray).items) : Ok(op.output)
}

function restDataSchema(op: ListOperation) {
  const { items, cursor, cursorDescription } = op.list.restData!
  const data = t.Object({ [items]: t.Array(op.list.item), [cursor]: Nullable(t.String({ description: cursorDescription })) })
  return t.Object({ data, meta: MetaSchema }, { [ENVELOPE]: 'paged' })
}

/** All of an array as one page of the envelope (`onePage`). */
const onePage = (all: unknown[]) => new Page(all, { total: all.length, limit: all.length, cursor: null })

/** The request's declared headers (`headers`), for `call.headers`. */
function declaredHeaders(op: Operation, headers: Record<string, string | undefined>) {
  if (!op.headers) return {}
  return { headers: Object.fromEntries(Object.keys(op.headers.properties).map(name => [name, headers[name]])) }
}

/** The Idempotency-Key header of a request (400 validation_error when malformed), for an operation that declares `idempotency`. */
const idempotencyKeyOfRequest = (request: Request) => idempotencyKeyOf({ 'idempotency-key': request.headers.get('idempotency-key') ?? undefined })

export function operationRoutes(ctx: AppContext, operations: readonly Operation[]) {
  const routes = new Elysia().use(authenticated(ctx))
  for (const op of operations) {
    if (op.rest === false) continue
    const status = isList(op) ? 200 : (op.status ?? 200)
    const statuses = [status, ...(!isList(op) && op.mayFindExisting ? [200] : []), ...(!isList(op) && op.mayAccept ? [202] : [])]
    routes.route(
      op.method,
      op.path,
      // biome-ignore lint/suspicious/noExplicitAny: the declaration's schemas type the request; Elysia cannot see them through the loop
      async ({ auth, params, query, body, headers, set, request }: any) => {
        const input = op.method === 'GET' || op.queryInput ? query : op.bodyField ? { [op.bodyField]: body } : body
        const { limit: _limit, cursor: _cursor, ...filters } = input ?? {}
        const args = { ...filters, ...headerArgValues(op, request), ...params }
        const answer = async (ctx: AppContext) => {
          const call: OperationCall = {
            ctx,
            auth,
            signal: request.signal,
            status: code => void (set.status = code),
            header: (name, value) => void (set.headers[name] = value),
            ...declaredHeaders(op, headers),
            requestId: requestFacts(request).id,
          }
          if (op.idempotency) call.idempotencyKey = idempotencyKeyOfRequest(request)
          if (op.alternative?.accept.test(request.headers.get('accept') ?? '')) return op.alternative.respond(call, args as never) as never
          set.status = status
          if (!isList(op)) return op.onePage ? onePage((await op.handle(call, args)) as unknown[]) : await op.handle(call, args)
          const { scope, fetch, present, key, restData } = op.list
          const prepared = await op.list.prepare?.(call, args as never)
          const listScope = await scope(call, args)
          if (key) return cursors(ctx).readKeyed(listScope, query, page => fetch(call, args, page, prepared), present, key)
          const page = await cursors(ctx).read(listScope, query, page => fetch(call, args, page, prepared) as never, present)
          return restData ? new Page({ [restData.items]: page.data, [restData.cursor]: page.meta.cursor } as never, page.meta) : page
        }
        // a read that waits for new mail or changes is woken by the primary's NOTIFY, and reads there
        return op.method === 'GET' && !op.writesOnRead && !input?.wait ? onReadReplica(ctx, auth, request, answer) : answer(ctx)
      },
      {
        ...(op.guard && {
          // biome-ignore lint/suspicious/noExplicitAny: `auth` comes from the derive of `authenticated`, which Elysia cannot see here
          transform: async ({ auth, request }: any) => op.guard!({ ctx, auth, signal: request.signal }),
        }),
        ...requestSchemas(op),
        ...headerSchema(op),
        // a 202 besides the success (`mayAccept`) says what it means in its own description
        response: Object.fromEntries(
          statuses.map(code => [code, code === 202 && status !== 202 ? { ...responseSchema(op), description: ACCEPTED } : responseSchema(op)]),
        ),
        detail: {
          tags: [op.tag],
          ...(op.bodyLimit && bodyLimit(op.bodyLimit)),
          ...(op.valueLimit && valueLimit(op.valueLimit)),
          summary: op.summary,
          ...(op.description && { description: op.description }),
        },
      },
    )
  }
  return routes
}
