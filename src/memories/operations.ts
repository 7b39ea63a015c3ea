/**
 * Memories declared once: durable JSON values under keys, versioned. The same six operations
 * serve the organization's scope at /v1/memories (where a function's runtime key reaches its own
 * function's scope) and a function's at /v1/functions/{id}/memories (REST only). The MCP tools and
 * the GraphQL fields `memories` and `memory` are those of /v1/memories; GraphQL reaches a
 * function's scope with its own `functionId` argument, and its list always carries the values.
 *
 * Where REST reads headers (If-Match, If-None-Match) the tools take `if_version`; where REST's
 * PATCH body is the merge patch itself, the tool takes it as `patch`.
 */
import type { TProperties } from '@sinclair/typebox'
import { t } from 'elysia'
import { errors } from '../errors'
import { keyedListOperation, type Operation, type OperationCall, operation, type ToolHints } from '../http/operation'
import { Batch, BatchResult, DeletedMemory, Memory, MEMORY_BATCH_MAX, MEMORY_KEY_MAX_BYTES, MemoryListItem, PutMemory } from './model'
import { applyMemoryOps, defaultMemoryScope, getMemory, listMemories, type MemoryOp, presentListItem, presentMemory } from './service'
import type { MemoryRow, MemoryScope } from './queries'

const TAG = 'Memories'

/** Values are free-form JSON: the body limit bounds them (the smallest JSON value with its comma takes 2 bytes), not the edge's value count. */
const FREE_JSON_VALUES = (1024 * 1024) / 2

const RestKey = t.String({ description: 'the key, percent-encoded as one path segment (`/` as %2F, as encodeURIComponent does)' })
/** The tools' key: the same rules, checked before the call. */
const ToolKey = t.String({ minLength: 1, maxLength: MEMORY_KEY_MAX_BYTES, description: '1 to 512 bytes; `/` separates prefixes' })
const FunctionId = t.String({ format: 'uuid', description: 'the function' })

const IfVersion = t.Optional(
  t.Integer({ minimum: 1, description: 'write only if the key has this version now (optimistic concurrency); else precondition_failed' }),
)

const IfMatch = t.Object({
  'if-match': t.Optional(
    t.String({
      description:
        'the version the key must have (`"12"` as the ETag gives it), or `*`: it must exist. A mismatch is 412 precondition_failed naming the current version',
    }),
  ),
  'if-none-match': t.Optional(t.String({ description: '`*`: create only; 412 precondition_failed if the key exists' })),
})

const CONCURRENCY = 'Without If-Match or If-None-Match the last write wins. Every write returns the new version in `version` and in the ETag header.'

interface Preconditions {
  if_version?: number
  mustExist?: boolean
  if_absent?: boolean
}

/** The precondition of a write: REST's from its headers, a tool's from `if_version`. */
function preconditions(call: OperationCall, ifVersion: number | undefined): Preconditions {
  if (!call.headers) return ifVersion === undefined ? {} : { if_version: ifVersion }
  const out: Preconditions = {}
  const match = call.headers['if-match']?.trim()
  if (match !== undefined) {
    if (match === '*') out.mustExist = true
    else {
      const m = /^(?:W\/)?"?(\d{1,15})"?$/.exec(match)
      if (!m) throw errors.validation('If-Match', 'must be a version such as "12" (the ETag of a read or write), or *')
      out.if_version = Number(m[1])
    }
  }
  const none = call.headers['if-none-match']?.trim()
  if (none !== undefined) {
    if (none !== '*') throw errors.validation('If-None-Match', 'only * (create only) is supported')
    if (match !== undefined) throw errors.validation('If-None-Match', 'cannot be combined with If-Match')
    out.if_absent = true
  }
  return out
}

const etag = (version: number) => `"${version}"`

/** Applies one write with its preconditions (`If-Match: *` becomes a check); REST gets the new version as the ETag. */
async function write(call: OperationCall, scope: MemoryScope, op: MemoryOp, ifVersion: number | undefined) {
  const pre = preconditions(call, ifVersion)
  const ops: MemoryOp[] = pre.mustExist ? [{ op: 'check', key: op.key, exists: true }] : []
  ops.push({ ...op, ...(pre.if_version !== undefined && { if_version: pre.if_version }), ...(pre.if_absent && { if_absent: true }) } as MemoryOp)
  const result = (await applyMemoryOps(call.ctx, scope, ops, false)).at(-1)!
  if (result.version !== null) call.header?.('etag', etag(result.version))
  return result
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A live function of the organization, as a scope; not_found otherwise. */
async function functionScope(call: OperationCall, id: string): Promise<MemoryScope> {
  const functionId = await call.ctx.plugins.memoryFunctions.liveId(call.ctx.sql, call.auth.orgId, id)
  if (!functionId) throw errors.notFound('function')
  return { orgId: call.auth.orgId, functionId }
}

/**
 * Whose memories a call reaches at /v1/memories: GraphQL's `functionId` names a function;
 * otherwise the organization's, or for a function's runtime key (SERVICE_API_KEY) its own
 * function's.
 */
function orgOrRuntimeScope(call: OperationCall): Promise<MemoryScope> {
  const functionId = call.extra?.function_id
  if (functionId === undefined) return defaultMemoryScope(call.ctx, call.auth)
  if (typeof functionId !== 'string' || !UUID.test(functionId)) throw errors.validation('function_id', 'must be a UUID')
  return functionScope(call, functionId.toLowerCase())
}

/** A list reads its scope twice (its cursor's scope, then its rows): once per call. */
const resolved = new WeakMap<OperationCall, Promise<MemoryScope>>()

function memoryOperations(scopeName: 'org' | 'function', prefix: string): Operation[] {
  const ofFunction = scopeName === 'function'
  const scopeNote = ofFunction
    ? 'function scope: deleted with the function'
    : "org scope; a function runtime key (SERVICE_API_KEY) reaches its own function's memories here"
  const scopeOf = (call: OperationCall, args: object): Promise<MemoryScope> => {
    let scope = resolved.get(call)
    if (!scope) {
      scope = ofFunction ? functionScope(call, (args as { id: string }).id) : orgOrRuntimeScope(call)
      resolved.set(call, scope)
    }
    return scope
  }
  const name = (verb: string, noun: 'memory' | 'memories') => (ofFunction ? `${verb}_function_${noun}` : `${verb}_${noun}`)
  const listParams = ofFunction ? { params: { id: FunctionId } } : {}
  // typed as the org scope's: a function scope's `id` is read by scopeOf alone
  const params = (ofFunction ? { id: FunctionId, key: RestKey } : { key: RestKey }) as { key: typeof RestKey }
  /** the tool of /v1/memories, with its own arguments; none for a function's scope */
  const tool = (description: string, args: TProperties, more: { closed?: true; hints?: Partial<ToolHints> } = {}) =>
    ofFunction
      ? (false as const)
      : { description, args: t.Object(args, more.closed && { additionalProperties: false }), ...(more.hints && { hints: more.hints }) }
  const graphqlOf = <G extends object>(field: G) => (ofFunction ? {} : { graphql: field })

  return [
    keyedListOperation({
      name: name('list', 'memories'),
      method: 'GET',
      path: prefix,
      tag: TAG,
      summary: 'List keys in byte order',
      description: `Expired keys are not listed. meta.total counts every matching key. Here: ${scopeNote}.`,
      ...listParams,
      input: t.Object({
        prefix: t.Optional(t.String({ minLength: 1, maxLength: 512, description: 'only keys starting with this' })),
        include_values: t.Optional(t.Boolean({ description: 'add each value (default false)' })),
      }),
      mcp: ofFunction ? false : { description: 'Keys in byte order, optionally under a prefix, with their values if asked.' },
      ...graphqlOf({
        field: 'memories',
        type: 'Memory',
        description:
          'Live memory keys in byte order, with their values (as GET /v1/memories?include_values=true).\n' +
          "The organization's scope, or the function's with functionId; a function's runtime key reads\n" +
          "its own function's scope by default, as on the REST API.",
        args: { function_id: 'ID' },
        fixed: { include_values: true },
      }),
      list: {
        item: MemoryListItem,
        // the scope names the filter: a cursor of another prefix is refused
        scope: async (call, args) => {
          const where = await scopeOf(call, args)
          return `memories:${call.auth.orgId}:${where.functionId ?? 'org'}:${args.prefix ?? ''}`
        },
        scopeNamesFilters: true,
        key: row => row.key,
        fetch: async (call, args, page) => {
          const withValues = args.include_values ?? false
          const { rows, total } = await listMemories(call.ctx.sql, await scopeOf(call, args), {
            prefix: args.prefix,
            after: page.after,
            limit: page.limit,
            withValues,
          })
          return { rows: rows.map(row => ({ ...row, withValues })), total }
        },
        present: (row: MemoryRow & { withValues: boolean }) => presentListItem(row, row.withValues),
      },
    }),
    operation({
      name: name('batch', 'memories'),
      method: 'POST',
      path: `${prefix}/batch`,
      tag: TAG,
      summary: `Apply up to ${MEMORY_BATCH_MAX} checks, sets and deletes, all or nothing`,
      description:
        'Operations apply in order; later ones see earlier ones. A failing check or if_version is 412 precondition_failed naming the operation (`operations[i]`) and details.current_version; ' +
        'a delete of a missing key is 404. Either way nothing is changed.',
      ...listParams,
      input: Batch,
      valueLimit: FREE_JSON_VALUES,
      output: BatchResult,
      mcp: tool(
        `Up to ${MEMORY_BATCH_MAX} operations (check, set, delete) applied in order, all or nothing; later ones see earlier ones. ` +
          'A failing check or if_version is precondition_failed naming operations[i] (details.current_version); a delete of a missing key is not_found. Either way nothing changes.',
        Batch.properties,
        { closed: true, hints: { destructiveHint: true } },
      ),
      handle: async (call, args) => {
        const results = await applyMemoryOps(call.ctx, await scopeOf(call, args), args.operations, true)
        return { results: results.map(r => ({ op: r.op, key: r.key, version: r.version })) }
      },
    }),
    operation({
      name: name('get', 'memory'),
      method: 'GET',
      path: `${prefix}/:key`,
      tag: TAG,
      summary: 'Read a key',
      description: 'Strongly consistent: a read sees every write that returned before it. Expired keys are 404 at once.',
      params,
      output: Memory,
      mcp: tool('The value, version and metadata of one key.', { key: ToolKey }),
      ...graphqlOf({ field: 'memory', type: 'Memory', args: { function_id: 'ID' } }),
      handle: async (call, args) => {
        const row = await getMemory(call.ctx.sql, await scopeOf(call, args), args.key)
        call.header?.('etag', etag(Number(row.version)))
        return presentMemory(row)
      },
    }),
    operation({
      name: name('set', 'memory'),
      method: 'PUT',
      path: `${prefix}/:key`,
      tag: TAG,
      summary: 'Write a key',
      description: `Replaces the value, metadata and expiry. ${CONCURRENCY}`,
      params,
      headers: IfMatch,
      input: PutMemory,
      valueLimit: FREE_JSON_VALUES,
      output: Memory,
      mcp: tool('Stores any JSON value under a key (replacing value, metadata and expiry). Pass if_version to write only over the version you read.', {
        key: ToolKey,
        if_version: IfVersion,
      }),
      handle: async (call, args) => {
        if (!('value' in args)) throw errors.validation('value', 'is required (any JSON value)')
        const { key, value, ttl_seconds, metadata } = args
        const result = await write(call, await scopeOf(call, args), { op: 'set', key, value, ttl_seconds, metadata }, versionOf(args))
        return presentMemory(result.row!)
      },
    }),
    operation({
      name: name('patch', 'memory'),
      method: 'PATCH',
      path: `${prefix}/:key`,
      tag: TAG,
      summary: 'Merge-patch a value',
      description: `Metadata and expiry stay as they are. 404 when the key does not exist. ${CONCURRENCY}`,
      params,
      headers: IfMatch,
      input: t.Object({
        patch: t.Unknown({ description: 'a JSON merge patch (RFC 7386) applied to the value; Content-Type application/merge-patch+json or application/json' }),
      }),
      bodyField: 'patch',
      valueLimit: FREE_JSON_VALUES,
      output: Memory,
      mcp: tool(
        'Applies a JSON merge patch (RFC 7386) to the value of an existing key: objects merge, null removes a member, anything else replaces. ' +
          'Metadata and expiry stay. not_found when the key does not exist; pass if_version to patch only the version you read.',
        { key: ToolKey, patch: t.Unknown({ description: 'the merge patch, usually an object' }), if_version: IfVersion },
      ),
      handle: async (call, args) => {
        const result = await write(call, await scopeOf(call, args), { op: 'merge', key: args.key, patch: args.patch }, versionOf(args))
        return presentMemory(result.row!)
      },
    }),
    operation({
      name: name('delete', 'memory'),
      method: 'DELETE',
      path: `${prefix}/:key`,
      tag: TAG,
      summary: 'Delete a key',
      description: `404 when it does not exist. ${CONCURRENCY}`,
      params,
      headers: IfMatch,
      output: DeletedMemory,
      mcp: tool('Deletes a key (not_found when it does not exist).', { key: ToolKey, if_version: IfVersion }),
      handle: async (call, args) => {
        const result = await write(call, await scopeOf(call, args), { op: 'delete', key: args.key }, versionOf(args))
        return { key: result.key, deleted: true as const, version: result.version! }
      },
    }),
  ]
}

/** A tool's `if_version` (REST's handlers read the headers instead). */
const versionOf = (args: object) => (args as { if_version?: number }).if_version

export const orgMemoryOperations = memoryOperations('org', '/v1/memories')
export const functionMemoryOperations = memoryOperations('function', '/v1/functions/:id/memories')
