/**
 * The REST routes of declared operations (http/operation.ts): the path's parameters, the query of
 * a GET or the JSON body of a write, validated by their TypeBox schemas; the handler's answer in
 * the envelope (a list as a page of `data` with `meta`). Every route is authenticated, and passes
 * the operation's guard (if any) before its request is validated.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from './auth'
import { bodyLimit, valueLimit } from './boundary'
import { Ok, Paged } from './envelope'
import { idempotencyKeyOf } from './idempotency'
import { isList, type Operation, type OperationCall } from './operation'
import { cursors, pageQuery } from './pagination'

/** The schemas Elysia validates the request with, and documents. */
function requestSchemas(op: Operation) {
  const params = op.params && { params: t.Object(op.params) }
  if (op.method !== 'GET') return { ...params, ...(op.input && { body: bodySchema(op) }) }
  if (!isList(op)) return { ...params, ...(op.input && { query: op.input }) }
  return { ...params, query: t.Object({ ...pageQuery(op.list.max, op.list.fallback), ...op.input?.properties }) }
}

/** The body of a write: its input, or the one input field that is the body whole (`bodyField`). */
function bodySchema(op: Operation) {
  const body = op.bodyField ? op.input!.properties[op.bodyField]! : op.input!
  return op.bodyOptional ? t.Optional(body) : body
}

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
    const statuses = !isList(op) && op.mayFindExisting ? [status, 200] : [status]
    routes.route(
      op.method,
      op.path,
      // biome-ignore lint/suspicious/noExplicitAny: the declaration's schemas type the request; Elysia cannot see them through the loop
      async ({ auth, params, query, body, headers, set, request }: any) => {
        const call: OperationCall = {
          ctx,
          auth,
          signal: request.signal,
          status: code => void (set.status = code),
          header: (name, value) => void (set.headers[name] = value),
          ...declaredHeaders(op, headers),
        }
        if (op.idempotency) call.idempotencyKey = idempotencyKeyOfRequest(request)
        const { limit: _limit, cursor: _cursor, ...filters } = (op.method === 'GET' ? query : op.bodyField ? { [op.bodyField]: body } : body) ?? {}
        const args = { ...filters, ...params }
        if (op.alternative?.accept.test(request.headers.get('accept') ?? '')) return op.alternative.respond(call, args as never) as never
        set.status = status
        if (!isList(op)) return op.handle(call, args)
        const { scope, fetch, present, key } = op.list
        const prepared = await op.list.prepare?.(call, args as never)
        const listScope = await scope(call, args)
        if (key) return cursors(ctx).readKeyed(listScope, query, page => fetch(call, args, page, prepared), present, key)
        return cursors(ctx).read(listScope, query, page => fetch(call, args, page, prepared) as never, present)
      },
      {
        ...(op.guard && {
          // biome-ignore lint/suspicious/noExplicitAny: `auth` comes from the derive of `authenticated`, which Elysia cannot see here
          transform: async ({ auth, request }: any) => op.guard!({ ctx, auth, signal: request.signal }),
        }),
        ...requestSchemas(op),
        ...(op.headers && { headers: op.headers }),
        response: Object.fromEntries(statuses.map(code => [code, isList(op) ? Paged(op.list.item) : Ok(op.output)])),
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
