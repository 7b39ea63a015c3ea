/**
 * Memory tools (the Memories routes at /v1/memories): durable JSON values under keys, versioned.
 * The scope is the REST route's: the organization's, or for a function's runtime key its own
 * function's.
 */
import { Type } from '@sinclair/typebox'
import { Page } from '../../http/envelope'
import { cursors } from '../../http/pagination'
import { Batch, BatchResult, DeletedMemory, Memory, MemoryListItem, MEMORY_BATCH_MAX, MEMORY_KEY_MAX_BYTES, MEMORY_TTL_MAX_SECONDS } from '../../memories/model'
import { applyMemoryOps, defaultMemoryScope, getMemory, listMemories, presentListItem, presentMemory } from '../../memories/service'
import { PageInput, PageOf, pageResult, TOOL_PAGE } from '../schema'
import { READ, tool, WRITE } from '../tool'

const Key = Type.String({ minLength: 1, maxLength: MEMORY_KEY_MAX_BYTES, description: '1 to 512 bytes; `/` separates prefixes' })
const IfVersion = Type.Optional(
  Type.Integer({ minimum: 1, description: 'write only if the key has this version now (optimistic concurrency); else precondition_failed' }),
)

export const memoryTools = [
  tool({
    name: 'list_memories',
    title: 'List memories',
    description: 'Keys in byte order, optionally under a prefix, with their values if asked.',
    input: Type.Object({
      ...PageInput,
      prefix: Type.Optional(Type.String({ minLength: 1, maxLength: MEMORY_KEY_MAX_BYTES })),
      include_values: Type.Optional(Type.Boolean()),
    }),
    output: PageOf(MemoryListItem),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/memories' },
    handle: async ({ ctx, auth }, args) => {
      const where = await defaultMemoryScope(ctx.sql, auth)
      // the REST list's cursor scope, so a cursor works on either surface
      const scope = `memories:${auth.orgId}:${where.functionId ?? 'org'}:${args.prefix ?? ''}`
      const limit = args.limit ?? TOOL_PAGE
      const after = cursors(ctx).decodeValue(scope, args.cursor)
      const withValues = args.include_values ?? false
      const { rows, total } = await listMemories(ctx.sql, where, { prefix: args.prefix, after, limit, withValues })
      const items = rows.slice(0, limit)
      const cursor = rows.length > limit ? cursors(ctx).encode(scope, items.at(-1)!.key) : null
      return pageResult(
        new Page(
          items.map(r => presentListItem(r, withValues)),
          { total, limit, cursor },
        ),
      )
    },
  }),
  tool({
    name: 'get_memory',
    title: 'Read a memory',
    description: 'The value, version and metadata of one key.',
    input: Type.Object({ key: Key }),
    output: Memory,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/memories/:key' },
    handle: async ({ ctx, auth }, args) => presentMemory(await getMemory(ctx.sql, await defaultMemoryScope(ctx.sql, auth), args.key)),
  }),
  tool({
    name: 'set_memory',
    title: 'Write a memory',
    description: 'Stores any JSON value under a key (replacing value, metadata and expiry). Pass if_version to write only over the version you read.',
    input: Type.Object({
      key: Key,
      value: Type.Unknown({ description: 'any JSON value, up to 256 KB' }),
      ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MEMORY_TTL_MAX_SECONDS })),
      metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      if_version: IfVersion,
    }),
    output: Memory,
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'PUT', path: '/v1/memories/:key' },
    handle: async ({ ctx, auth }, args) => {
      const [result] = await applyMemoryOps(ctx, await defaultMemoryScope(ctx.sql, auth), [{ op: 'set', ...args }], false)
      return presentMemory(result!.row!)
    },
  }),
  tool({
    name: 'patch_memory',
    title: 'Merge-patch a memory',
    description:
      'Applies a JSON merge patch (RFC 7386) to the value of an existing key: objects merge, null removes a member, anything else replaces. ' +
      'Metadata and expiry stay. not_found when the key does not exist; pass if_version to patch only the version you read.',
    input: Type.Object({ key: Key, patch: Type.Unknown({ description: 'the merge patch, usually an object' }), if_version: IfVersion }),
    output: Memory,
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'PATCH', path: '/v1/memories/:key' },
    handle: async ({ ctx, auth }, args) => {
      const [result] = await applyMemoryOps(ctx, await defaultMemoryScope(ctx.sql, auth), [{ op: 'merge', ...args }], false)
      return presentMemory(result!.row!)
    },
  }),
  tool({
    name: 'batch_memories',
    title: 'Apply memory operations atomically',
    description:
      `Up to ${MEMORY_BATCH_MAX} operations (check, set, delete) applied in order, all or nothing; later ones see earlier ones. ` +
      'A failing check or if_version is precondition_failed naming operations[i] (details.current_version); a delete of a missing key is not_found. Either way nothing changes.',
    input: Batch,
    output: BatchResult,
    annotations: { ...WRITE, destructiveHint: true },
    rest: { method: 'POST', path: '/v1/memories/batch' },
    handle: async ({ ctx, auth }, args) => {
      const results = await applyMemoryOps(ctx, await defaultMemoryScope(ctx.sql, auth), args.operations, true)
      return { results: results.map(r => ({ op: r.op, key: r.key, version: r.version })) }
    },
  }),
  tool({
    name: 'delete_memory',
    title: 'Delete a memory',
    description: 'Deletes a key (not_found when it does not exist).',
    input: Type.Object({ key: Key, if_version: IfVersion }),
    output: DeletedMemory,
    annotations: { ...WRITE, destructiveHint: true },
    rest: { method: 'DELETE', path: '/v1/memories/:key' },
    handle: async ({ ctx, auth }, args) => {
      const [result] = await applyMemoryOps(ctx, await defaultMemoryScope(ctx.sql, auth), [{ op: 'delete', ...args }], false)
      return { key: result!.key, deleted: true as const, version: result!.version! }
    },
  }),
]
