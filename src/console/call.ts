/**
 * The console reads and writes through the declared operations (src/operations.ts): the same
 * validation, rules, roles and cursor pages as REST, MCP and GraphQL, for the signed-in person,
 * so the console holds no SQL or rule of a feature.
 */
import { Type, type TObject } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { errors } from '../errors'
import { credentialMayCall } from '../http/credential-scope'
import { isList, type Operation, type OperationCall } from '../http/operation'
import { cursors } from '../http/pagination'
import { validationError } from '../mcp/server'
import { OPERATIONS } from '../operations'

const byName = new Map<string, Operation>(OPERATIONS.map(op => [op.name, op]))
/** The console's page size. */
const PAGE = 25

/** A page of a list: its items, how many match in all, and the cursor of the next page (null at the end). */
export interface ListPage<T = Row> {
  items: T[]
  total: number
  cursor: string | null
}

// biome-ignore lint/suspicious/noExplicitAny: the operations' answers, rendered by the pages
export type Row = Record<string, any>

const inputOf = (op: Operation): TObject =>
  Type.Object({
    ...(op.params ?? {}),
    ...(op.input?.properties ?? {}),
    ...(isList(op) ? { limit: Type.Optional(Type.Integer()), cursor: Type.Optional(Type.String()) } : {}),
  })

function prepare(auth: Auth, name: string, args: Record<string, unknown>): { op: Operation; given: Record<string, unknown> } {
  const op = byName.get(name)
  if (!op) throw new Error(`console: no operation ${name}`)
  if (!credentialMayCall(auth, op.method, op.path)) throw errors.forbidden(`${name}: not allowed for this sign-in`)
  const given = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined && v !== ''))
  const invalid = validationError(inputOf(op), given)
  if (invalid) throw invalid
  return { op, given }
}

const callOf = (ctx: AppContext, auth: Auth, idempotencyKey?: string): OperationCall => ({
  ctx,
  auth,
  signal: AbortSignal.timeout(30_000),
  idempotencyKey,
})

/** Calls the operation `name` (path parameters by their names, `id` for `/:id`) for this person. */
export async function call<T = Row>(ctx: AppContext, auth: Auth, name: string, args: Record<string, unknown> = {}, idempotencyKey?: string): Promise<T> {
  const { op, given } = prepare(auth, name, args)
  if (isList(op)) throw new Error(`console: ${name} is a list; use page()`)
  const c = callOf(ctx, auth, idempotencyKey)
  await op.guard?.(c)
  return (await op.handle(c, given as never)) as T
}

/** One page of the list operation `name`, newest first; `cursor` continues a previous page. */
export async function page<T = Row>(ctx: AppContext, auth: Auth, name: string, args: Record<string, unknown> = {}): Promise<ListPage<T>> {
  const { op, given } = prepare(auth, name, args)
  if (!isList(op)) throw new Error(`console: ${name} is not a list`)
  const c = callOf(ctx, auth)
  await op.guard?.(c)
  const { limit, cursor, ...filters } = given as { limit?: number; cursor?: string }
  const { scope, fetch, present, key } = op.list
  const prepared = await op.list.prepare?.(c, filters as never)
  const listScope = await scope(c, filters as never)
  const rows = (req: Parameters<typeof fetch>[2]) => fetch(c, filters as never, req, prepared)
  const query = { limit: limit ?? PAGE, cursor }
  const answer = key
    ? await cursors(ctx).readKeyed(listScope, query, rows, present as never, key, PAGE)
    : await cursors(ctx).read(listScope, query, rows as never, present as never, PAGE)
  return { items: answer.data as T[], total: answer.meta.total, cursor: answer.meta.cursor ?? null }
}
