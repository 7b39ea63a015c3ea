/**
 * The operations on one kind of resource an organization keeps (its inboxes, its templates, its
 * webhook endpoints): the list at `path`, and the read, change and delete of one at `path/:id`.
 * They share their tag, the noun of the `id` parameter (the MCP tool's `<resource>_id`), the
 * answer's schema, how a row is presented and the GraphQL type of their reads, so these are said
 * once; each declaration says what is its own: its name, its words and the service call.
 */
import type { Static, TObject, TProperties, TSchema } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { listOperation, operation, type ListOperation, type Operation, type ResourceOperation } from './operation'
import type { PageRequest } from './pagination'
import { Deleted, IdParam } from './schema'

type Sql = AppContext['sql']
type Id = typeof IdParam

/** What every operation of the resource says of its own. */
interface Own {
  name: string
  summary: string
  description?: string
  /** the MCP tool, where it differs from the resource's (`mcp`) */
  mcp?: ResourceOperation['mcp']
}

/** What the operations of one kind of resource share. */
export interface Resource<O extends TSchema, Row> {
  tag: string
  /** the noun of the `id` parameter: the MCP tool's `<resource>_id` */
  resource: string
  output: O
  present(row: Row): Static<O>
  /** the GraphQL type of the reads' node */
  type: string
  /** false: the operations are no MCP tools */
  mcp?: false
}

/** The operations of one kind of resource, its list at `path` (`/v1/templates`) and each one at `<path>/:id`, declared from what they share. */
export function resourceOperations<O extends TSchema, Row extends { id: string }>(path: string, r: Resource<O, Row>) {
  // one of them: its path and its `id` parameter
  const byId = <M extends 'GET' | 'PATCH' | 'DELETE'>(method: M) => ({ method, path: `${path}/:id`, params: IdParam, resource: r.resource })
  // the declaration's own fields, with the resource's MCP surface unless it says otherwise
  const own = ({ name, summary, description, mcp }: Own) => ({
    name,
    tag: r.tag,
    summary,
    ...(description !== undefined && { description }),
    ...(mcp !== undefined ? { mcp } : r.mcp === false && { mcp: false as const }),
  })
  return {
    /** The list, newest first: `fetch` reads a page of the organization's rows, with the list's filters (`input`). */
    list: <I extends TProperties = TProperties>(
      op: Own & {
        input?: TObject<I>
        graphql: Omit<NonNullable<ListOperation['graphql']>, 'type'>
        scope: ListOperation<TProperties, I>['list']['scope']
        fetch(sql: Sql, orgId: string, page: PageRequest, args: Static<TObject<I>>): Promise<{ rows: Row[]; total: number }>
      },
    ): Operation =>
      listOperation<TProperties, I, O, Row>({
        ...own(op),
        method: 'GET',
        path,
        ...(op.input && { input: op.input }),
        graphql: { ...op.graphql, type: r.type },
        list: {
          item: r.output,
          scope: op.scope,
          fetch: ({ ctx, auth }, args, page) => op.fetch(ctx.sql, auth.orgId, page, args),
          present: r.present,
        },
      }),
    /** One by its id: `find` reads it (not_found when the organization has none). */
    get: (op: Own & { graphql: string; find(sql: Sql, orgId: string, id: string): Promise<Row> }): Operation =>
      operation<Id, TProperties, O>({
        ...own(op),
        ...byId('GET'),
        output: r.output,
        graphql: { field: op.graphql, type: r.type },
        handle: async ({ ctx, auth }, { id }) => r.present(await op.find(ctx.sql, auth.orgId, id)),
      }),
    /** A change of one by its id: `change` writes `input`'s fields and answers the row. */
    update: <I extends TProperties>(
      op: Own & {
        input: TObject<I>
        change(sql: Sql, orgId: string, id: string, patch: Static<TObject<I>>): Promise<Row>
      },
    ): Operation =>
      operation<Id, I, O>({
        ...own(op),
        ...byId('PATCH'),
        input: op.input,
        output: r.output,
        handle: async ({ ctx, auth }, { id, ...patch }) => r.present(await op.change(ctx.sql, auth.orgId, id, patch as unknown as Static<TObject<I>>)),
      }),
    /** A delete of one by its id: `remove` deletes it and answers its id. */
    delete: (op: Own & { remove(sql: Sql, orgId: string, id: string): Promise<{ id: string }> }): Operation =>
      operation<Id, TProperties, typeof Deleted>({
        ...own(op),
        ...byId('DELETE'),
        output: Deleted,
        handle: async ({ ctx, auth }, { id }) => ({ ...(await op.remove(ctx.sql, auth.orgId, id)), deleted: true as const }),
      }),
  }
}
