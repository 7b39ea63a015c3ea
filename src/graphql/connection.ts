/**
 * Relay-style connections over our cursor pagination: `first` is the page size, `after` one of
 * our signed cursors (the codec of REST lists, src/http/pagination.ts), scoped to the list it
 * came from so that another list refuses it. Lists go forward only (newest first, or by key for
 * memories): there is no `last`/`before`, and `hasPreviousPage` is false.
 */
import type { AppContext } from '../context'
import { errors } from '../errors'
import { cursors, type PageRequest } from '../http/pagination'

export const PAGE_DEFAULT = 20
export const PAGE_MAX = 100

export interface ConnectionArgs {
  first?: number | null
  after?: string | null
}

/** The arguments every connection field takes. */
export const CONNECTION_ARGS = `first: Int = ${PAGE_DEFAULT}, after: String`

/** The connection and edge types of a node type. */
export const connectionTypes = (node: string, what: string) => `
"""A page of ${what}, newest first. \`first\` is 1 to ${PAGE_MAX} (default ${PAGE_DEFAULT}); pass \`pageInfo.endCursor\` as \`after\` for the next page."""
type ${node}Connection {
  edges: [${node}Edge!]!
  "the nodes of \`edges\`, without cursors"
  nodes: [${node}!]!
  pageInfo: PageInfo!
  "every item of the list, regardless of the page"
  totalCount: Int!
}

type ${node}Edge {
  cursor: String!
  node: ${node}!
}
`

export const PAGE_INFO = `
"""Where a page is in its list. Lists go forward only: \`hasPreviousPage\` is always false and \`startCursor\` the first edge's cursor."""
type PageInfo {
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
  endCursor: String
}
`

function limitOf(args: ConnectionArgs): number {
  const first = args.first ?? PAGE_DEFAULT
  if (!Number.isInteger(first) || first < 1 || first > PAGE_MAX) throw errors.validation('first', `must be 1 to ${PAGE_MAX}`)
  return first
}

/** The page a connection's arguments ask for; a cursor of another list is a validation_error naming `after`. */
export function pageOf(ctx: AppContext, scope: string, args: ConnectionArgs): PageRequest {
  try {
    return { limit: limitOf(args), after: cursors(ctx).decode(scope, args.after ?? undefined) }
  } catch (error) {
    throw renameCursor(error)
  }
}

/** The same for lists ordered by something other than an id (memory keys). */
export function keyedPageOf(ctx: AppContext, scope: string, args: ConnectionArgs): { limit: number; after: string | null } {
  try {
    return { limit: limitOf(args), after: cursors(ctx).decodeValue(scope, args.after ?? undefined) }
  } catch (error) {
    throw renameCursor(error)
  }
}

// the codec names the REST parameter, `cursor`; here the argument is `after`
function renameCursor(error: unknown): unknown {
  if (error instanceof Error && error.message.startsWith('cursor: ')) return errors.validation('after', error.message.slice('cursor: '.length))
  return error
}

/**
 * The connection of a page read with `limit + 1` rows (the extra row only says there is more).
 * `keyOf` is what the list is ordered by (the id, or a memory's key).
 */
export function connection<Row, Node>(
  ctx: AppContext,
  scope: string,
  page: { limit: number },
  result: { rows: Row[]; total: number },
  present: (row: Row) => Node,
  keyOf: (row: Row) => string = row => (row as { id: string }).id,
) {
  const more = result.rows.length > page.limit
  const rows = more ? result.rows.slice(0, page.limit) : result.rows
  const edges = rows.map(row => ({ cursor: cursors(ctx).encode(scope, keyOf(row)), node: present(row) }))
  return {
    edges,
    nodes: edges.map(e => e.node),
    pageInfo: { hasNextPage: more, hasPreviousPage: false, startCursor: edges[0]?.cursor ?? null, endCursor: edges.at(-1)?.cursor ?? null },
    totalCount: result.total,
  }
}

/**
 * The connection of a parent's children (a thread's emails, an endpoint's deliveries), read
 * through a loader that reads the lists of one request's parents together. `scope` names the
 * list: its cursors are refused by any other.
 */
export async function childConnection<Row, Node>(
  ctx: AppContext,
  scope: string,
  args: ConnectionArgs,
  loader: { load(key: { parent: string; page: PageRequest }): Promise<{ rows: Row[]; total: number }> },
  parent: string,
  present: (row: Row) => Node,
) {
  const page = pageOf(ctx, scope, args)
  return connection(ctx, scope, page, await loader.load({ parent, page }), present)
}
