/**
 * One operation of the API, declared once: its name, where REST serves it, its inputs and output
 * as TypeBox schemas, and its handler. Small adapters make every surface of it:
 * http/operation-routes.ts the REST route (and so its OpenAPI entry), mcp/operation-tools.ts the
 * MCP tool, graphql/operation-fields.ts the GraphQL Query field of a read. A field added to an
 * operation's schemas appears on all three.
 *
 * Where the surfaces differ on purpose, the adapters do it once for every operation:
 * - names: REST and MCP speak snake_case, GraphQL camelCase; a path's `id` is `id` in REST and
 *   GraphQL and `<resource>_id` among an MCP tool's arguments (`delivery_id`);
 * - lists: REST answers a page in the envelope (`data`, `meta`), MCP `{items, total, limit,
 *   cursor}` with a smaller default page, GraphQL a Relay connection (`first`, `after`);
 * - who may call: every surface asks credential-scope.ts about the REST operation, and a read-only
 *   OAuth token reaches the MCP tools of reads only.
 */
import type { Static, TObject, TProperties, TSchema } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import type { PageRequest } from './pagination'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** The default page size of a tool: smaller than the REST default, since every item lands in a model's context. */
export const TOOL_PAGE = 20

/** What a handler gets besides its input, on every surface. */
export interface OperationCall {
  ctx: AppContext
  auth: Auth
  /** aborted when the client goes away */
  signal: AbortSignal
  /** REST's status of this answer, where it depends on what happened (201 created, 200 found, 202 held); other surfaces have none */
  status?(code: 200 | 201 | 202): void
  /** REST's response header (an ETag); other surfaces have none */
  header?(name: string, value: string): void
  /** REST's request headers the operation declares (`headers`), by their names; other surfaces have none */
  headers?: Record<string, string | undefined>
  /** GraphQL's arguments of the field beyond the operation's (`graphql.args`), snake_case; other surfaces have none */
  extra?: Record<string, unknown>
  /** the key of an operation that declares `idempotency`: REST's Idempotency-Key header (absent without one), MCP's required `idempotency_key` */
  idempotencyKey?: string
  /** the request's id (X-Request-Id), where the surface has one request: REST and GraphQL */
  requestId?: string
}

/** MCP's hints about a tool; derived from the method unless an operation says otherwise. */
export interface ToolHints {
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

interface Declared<P extends TProperties, I extends TProperties> {
  /** snake_case, verb first: the MCP tool's name (`list_webhook_deliveries`) */
  name: string
  method: Method
  /** where REST serves it, Elysia style (`/v1/webhooks/deliveries/:id`) */
  path: string
  /** the OpenAPI tag */
  tag: string
  /** one line: the OpenAPI summary and the MCP tool's title */
  summary: string
  /** the OpenAPI description and the MCP tool's description */
  description?: string
  /** the path's parameters, by their names in `path` */
  params?: P
  /** the query of a GET, the JSON body of a write: its fields are the other arguments */
  input?: TObject<I>
  /** a write whose body may be left out altogether (read like an empty one) */
  bodyOptional?: true
  /** a write whose body may be larger than MAX_BODY_BYTES: its limit in bytes (http/boundary.ts `bodyLimit`) */
  bodyLimit?: number
  /** the noun of an `id` parameter: its MCP argument is `<resource>_id` */
  resource?: string
  /** the MCP tool, where it differs from the REST operation; false for no tool */
  mcp?: false | ToolSurface
  /**
   * the GraphQL Query field of a read: its name and the SDL type of its node; `params` names the
   * field's argument of a path parameter where it is not the parameter's camelCase name
   * (`{ id: 'networkId' }` for the network of `/v1/networks/:id/members`). An `args` entry that
   * is neither a path parameter nor an input is an argument of the field alone (`call.extra`);
   * `fixed` inputs are not arguments of the field: the handler gets these values.
   */
  graphql?: {
    field: string
    type: string
    description?: string
    args?: Record<string, string>
    params?: Record<string, string>
    fixed?: Record<string, unknown>
  } & FieldSurface
  /**
   * A gate every surface passes before anything else of the operation (an entitlement): REST
   * runs it at the transform stage, before the body and query are validated, right after the
   * credential is authenticated; MCP and GraphQL before the handler.
   */
  guard?(call: OperationCall): Promise<void>
  /**
   * REST only: another form of the answer, for a request whose Accept matches (a CSV export). Its
   * Response goes out as is, outside the envelope (a list's cursor and limit do not apply);
   * OpenAPI documents the JSON answer.
   */
  alternative?: { accept: RegExp; respond(call: OperationCall, args: Args<P, I>): Promise<Response> }
  /** REST request headers the handler reads as `call.headers` (If-Match), validated and documented */
  headers?: TObject
  /** a write whose JSON body is this one input field whole (a merge patch), not an object of the fields */
  bodyField?: string
  /** a write storing free-form JSON: the most values its body may hold (http/boundary.ts `valueLimit`) */
  valueLimit?: number
  /** a write done at most once per key (http/idempotency.ts): REST reads an optional Idempotency-Key header, MCP requires `idempotency_key` (described by `key`); the handler gets it as `call.idempotencyKey` */
  idempotency?: { key: string }
  /** false: no REST route of its own; another surface (a tool) of the REST operation another declaration makes at the same method and path */
  rest?: false
  /** input fields REST reads from request headers (header name → field), as strings; other surfaces take them as arguments */
  headerArgs?: Record<string, string>
  /** REST reads a write's input from its query, not a body (the flags of a DELETE) */
  queryInput?: true
  /** a GET that may write (it makes what it reads on first use): it reads on the primary, never on the read replica (http/read-routing.ts) */
  writesOnRead?: true
}

/** What an MCP tool takes and answers where it differs from its REST operation. */
interface ToolSurface {
  /** the tool's title where the summary (REST's) does not fit it */
  title?: string
  /** the tool's description, for a model, where REST's does not fit it */
  description?: string
  /** hints where the method's (hintsOf) are not right: a write that reaches the world, a repeat that is harmless */
  hints?: Partial<ToolHints>
  /** with `mayFindExisting`: the answer adds `created`, false when the handler found what existed (`call.status(200)`) */
  reportsCreated?: true
  /** the tool's own arguments by its names for them, added to (or replacing) REST's parameters and input fields, with their `additionalProperties` */
  args?: TObject
  /** the tool's argument of a path parameter, where it is neither `<resource>_id` for `id` nor the parameter's name */
  params?: Record<string, string>
  /** the operation answers an array: the tool answers `{items}`, the array described so */
  items?: string
  /** the tool takes these of the input's fields only, in this order */
  input?: readonly string[]
  /** the tool names these input fields otherwise (`{ q: 'query' }`) */
  rename?: Record<string, string>
  /** the tool's own answer: `present` makes it from the handler's (signed download links instead of metadata) */
  output?: TSchema
  present?(call: OperationCall, answer: unknown): unknown
}

/** What a GraphQL Query field takes where it differs from its REST operation. */
interface FieldSurface {
  /** the field takes these of the input's fields only, in this order */
  input?: readonly string[]
}

type Args<P extends TProperties, I extends TProperties> = Static<TObject<P>> & Static<TObject<I>>

/** An operation on one resource (or an action): the handler's answer is the payload. */
export interface ResourceOperation<P extends TProperties = TProperties, I extends TProperties = TProperties, O extends TSchema = TSchema>
  extends Declared<P, I> {
  output: O
  /** the REST status of a success (default 200; 202 for work started, not done) */
  status?: 200 | 201 | 202
  /** a create that answers 200 with what already existed (the handler says so: `call.status(200)`) */
  mayFindExisting?: true
  /** an action that may only be started: REST answers 202 when the handler says so (`call.status(202)`: a send held for approval) */
  mayAccept?: true
  /** an array answered whole: REST renders it as one page of the envelope (total and limit its length, no cursor) */
  onePage?: true
  handle(call: OperationCall, args: Args<P, I>): Promise<Static<O>>
}

/** A list, newest first, paged by our cursors: each surface pages it its own way. */
export interface ListOperation<P extends TProperties = TProperties, I extends TProperties = TProperties, O extends TSchema = TSchema, Row = unknown>
  extends Declared<P, I> {
  list: {
    item: O
    /** the cursor's scope: a cursor of another list (or another filter) is refused */
    scope(call: OperationCall, args: Args<P, I>): string | Promise<string>
    fetch(call: OperationCall, args: Args<P, I>, page: PageRequest, prepared?: unknown): Promise<{ rows: Row[]; total: number }>
    present(row: Row): Static<O>
    /** REST's page sizes: at most `max` (default 100), `fallback` when none is asked (default 50) */
    max?: number
    fallback?: number
    /** a lookup of what the arguments name, made before the cursor is read (an inbox's not_found comes first); fetch gets its answer */
    prepare?(call: OperationCall, args: Args<P, I>): Promise<unknown>
    /** what the list is ordered by and a cursor holds, where it is not the row's id (a memory's key) */
    key?(row: Row): string
    /** the scope names every filter itself: GraphQL adds none to it */
    scopeNamesFilters?: true
    /** REST's data is an object: the page's items under `items`, its cursor (also meta.cursor) under `cursor` */
    restData?: { items: string; cursor: string; cursorDescription: string }
  }
}

export type Operation = ResourceOperation | ListOperation

export const isList = (op: Operation): op is ListOperation => 'list' in op

/** Declares an operation on one resource, keeping its input and output types together. */
export const operation = <P extends TProperties = TProperties, I extends TProperties = TProperties, O extends TSchema = TSchema>(
  op: ResourceOperation<P, I, O>,
): Operation => op as unknown as Operation

/** Declares a list. */
export const listOperation = <
  P extends TProperties = TProperties,
  I extends TProperties = TProperties,
  O extends TSchema = TSchema,
  Row extends { id: string } = { id: string },
>(
  op: ListOperation<P, I, O, Row>,
): Operation => op as unknown as Operation

/** Declares a list ordered by something other than an id (`list.key`). */
export const keyedListOperation = <P extends TProperties = TProperties, I extends TProperties = TProperties, O extends TSchema = TSchema, Row = unknown>(
  op: ListOperation<P, I, O, Row> & { list: { key(row: Row): string } },
): Operation => op as unknown as Operation

/** The MCP hints of an operation: reads touch nothing; writes say whether a repeat is harmless. */
export function hintsOf(op: Operation): ToolHints {
  const read = op.method === 'GET'
  const base: ToolHints = {
    readOnlyHint: read,
    destructiveHint: op.method === 'DELETE',
    idempotentHint: read || op.method === 'PUT' || op.method === 'PATCH',
    openWorldHint: false,
  }
  return { ...base, ...(op.mcp ? op.mcp.hints : {}) }
}

/** The input fields of a surface that takes some of them only (`mcp.input`, `graphql.input`), in its order; else all. */
export function inputsOf(op: Operation, only: readonly string[] | undefined): [string, TSchema][] {
  const all = op.input?.properties ?? {}
  if (!only) return Object.entries(all)
  return only.map(name => {
    if (!all[name]) throw new Error(`${op.name}: ${name} is not a field of its input`)
    return [name, all[name]]
  })
}

/** The path's parameter names, in order. */
export const pathParams = (path: string) => [...path.matchAll(/:(\w+)/g)].map(m => m[1]!)
