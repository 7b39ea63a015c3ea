/** Memories (org scope): `/v1/memories/{key}`, the list, and batches. */
import { Elysia, t } from 'elysia'
import type { TSchema } from '@sinclair/typebox'
import type { Auth } from '../auth/principal'
import { valueLimit } from '../http/boundary'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Page, Paged } from '../http/envelope'
import { errors } from '../errors'
import { pageQuery, cursors } from '../http/pagination'
import { Batch, BatchResult, DeletedMemory, Memory, MemoryListItem, PutMemory, MEMORY_BATCH_MAX } from './model'
import {
  applyMemoryOps,
  defaultMemoryScope,
  getMemory,
  listMemories,
  presentListItem,
  presentMemory,
  type MemoryOp,
  type MemoryScope,
  type OpResult,
} from './service'

/** Values are free-form JSON: the body limit bounds them (the smallest JSON value with its comma takes 2 bytes), not the edge's value count. */
const FREE_JSON_VALUES = (1024 * 1024) / 2

const KeyParam = t.Object({
  key: t.String({ description: 'the key, percent-encoded as one path segment (`/` as %2F, as encodeURIComponent does)' }),
})

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

/** The precondition of a write from its headers. */
function preconditions(headers: { 'if-match'?: string; 'if-none-match'?: string }): { if_version?: number; mustExist?: boolean; if_absent?: boolean } {
  const out: { if_version?: number; mustExist?: boolean; if_absent?: boolean } = {}
  const match = headers['if-match']?.trim()
  if (match !== undefined) {
    if (match === '*') out.mustExist = true
    else {
      const m = /^(?:W\/)?"?(\d{1,15})"?$/.exec(match)
      if (!m) throw errors.validation('If-Match', 'must be a version such as "12" (the ETag of a read or write), or *')
      out.if_version = Number(m[1])
    }
  }
  const none = headers['if-none-match']?.trim()
  if (none !== undefined) {
    if (none !== '*') throw errors.validation('If-None-Match', 'only * (create only) is supported')
    if (match !== undefined) throw errors.validation('If-None-Match', 'cannot be combined with If-Match')
    out.if_absent = true
  }
  return out
}

const etag = (version: number) => `"${version}"`

const FunctionKeyParam = t.Object({ id: t.String({ format: 'uuid', description: 'the function' }), key: KeyParam.properties.key })

/**
 * Org scope at /v1/memories (a function's runtime key reaches its own function's scope there),
 * function scope at /v1/functions/{id}/memories: the same routes, the scope resolved per request.
 */
export function memoryRoutes(ctx: AppContext) {
  // a function's runtime key (SERVICE_API_KEY) works in its function's scope by default
  const orgOrRuntime = (auth: Auth) => defaultMemoryScope(ctx.sql, auth)
  const ofFunction = async (auth: Auth, params: { id?: string }): Promise<MemoryScope> => {
    const [fn] = await ctx.sql<{ id: string }[]>`select id from functions where org_id = ${auth.orgId} and id = ${params.id!} and deleted_at is null`
    if (!fn) throw errors.notFound('function')
    return { orgId: auth.orgId, functionId: fn.id }
  }
  return new Elysia()
    .use(
      memoryRoutesAt(
        ctx,
        '/v1/memories',
        KeyParam,
        undefined,
        orgOrRuntime,
        "org scope; a function runtime key (SERVICE_API_KEY) reaches its own function's memories here",
      ),
    )
    .use(
      memoryRoutesAt(
        ctx,
        '/v1/functions/:id/memories',
        FunctionKeyParam,
        t.Object({ id: FunctionKeyParam.properties.id }),
        ofFunction,
        'function scope: deleted with the function',
      ),
    )
}

function memoryRoutesAt(
  ctx: AppContext,
  prefix: string,
  keyParams: typeof KeyParam | typeof FunctionKeyParam,
  /** the schema of the prefix's own parameters, when it has any */
  listParams: TSchema | undefined,
  resolve: (auth: Auth, params: { id?: string }) => Promise<MemoryScope>,
  scopeNote: string,
) {
  /** Applies one write with the request's preconditions; `If-Match: *` becomes a check. */
  async function write(
    scope: MemoryScope,
    op: MemoryOp,
    headers: Record<string, string | undefined>,
    set: { headers: Record<string, string | number | string[]> },
  ): Promise<OpResult> {
    const pre = preconditions(headers)
    const ops: MemoryOp[] = pre.mustExist ? [{ op: 'check', key: op.key, exists: true }] : []
    ops.push({ ...op, ...(pre.if_version !== undefined && { if_version: pre.if_version }), ...(pre.if_absent && { if_absent: true }) } as MemoryOp)
    const results = await applyMemoryOps(ctx, scope, ops, false)
    const result = results.at(-1)!
    if (result.version !== null) set.headers.etag = etag(result.version)
    return result
  }

  return new Elysia({ prefix, tags: ['Memories'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query, params }) => {
        const where = await resolve(auth, params as { id?: string })
        const scope = `memories:${auth.orgId}:${where.functionId ?? 'org'}:${query.prefix ?? ''}`
        const limit = query.limit ?? 50
        const after = cursors(ctx).decodeValue(scope, query.cursor)
        const withValues = query.include_values ?? false
        const { rows, total } = await listMemories(ctx.sql, where, { prefix: query.prefix, after, limit, withValues })
        const more = rows.length > limit
        const items = rows.slice(0, limit)
        return new Page(
          items.map(r => presentListItem(r, withValues)),
          { total, limit, cursor: more ? cursors(ctx).encode(scope, items.at(-1)!.key) : null },
        )
      },
      {
        ...(listParams && { params: listParams }),
        query: t.Object({
          ...pageQuery(),
          prefix: t.Optional(t.String({ minLength: 1, maxLength: 512, description: 'only keys starting with this' })),
          include_values: t.Optional(t.Boolean({ description: 'add each value (default false)' })),
        }),
        response: { 200: Paged(MemoryListItem) },
        detail: { summary: 'List keys in byte order', description: `Expired keys are not listed. meta.total counts every matching key. Here: ${scopeNote}.` },
      },
    )
    .post(
      '/batch',
      async ({ auth, body, params }) => {
        const results = await applyMemoryOps(ctx, await resolve(auth, params as { id?: string }), body.operations, true)
        return { results: results.map(r => ({ op: r.op, key: r.key, version: r.version })) }
      },
      {
        ...(listParams && { params: listParams }),
        body: Batch,
        response: { 200: Ok(BatchResult) },
        detail: {
          ...valueLimit(FREE_JSON_VALUES),
          summary: `Apply up to ${MEMORY_BATCH_MAX} checks, sets and deletes, all or nothing`,
          description:
            'Operations apply in order; later ones see earlier ones. A failing check or if_version is 412 precondition_failed naming the operation (`operations[i]`) and details.current_version; ' +
            'a delete of a missing key is 404. Either way nothing is changed.',
        },
      },
    )
    .get(
      '/:key',
      async ({ auth, params, set }) => {
        const row = await getMemory(ctx.sql, await resolve(auth, params as { id?: string }), params.key)
        set.headers.etag = etag(Number(row.version))
        return presentMemory(row)
      },
      {
        params: keyParams,
        response: { 200: Ok(Memory) },
        detail: { summary: 'Read a key', description: 'Strongly consistent: a read sees every write that returned before it. Expired keys are 404 at once.' },
      },
    )
    .put(
      '/:key',
      async ({ auth, params, body, headers, set }) => {
        if (!('value' in body)) throw errors.validation('value', 'is required (any JSON value)')
        const result = await write(
          await resolve(auth, params as { id?: string }),
          { op: 'set', key: params.key, value: body.value, ttl_seconds: body.ttl_seconds, metadata: body.metadata },
          headers,
          set,
        )
        return presentMemory(result.row!)
      },
      {
        params: keyParams,
        headers: IfMatch,
        body: PutMemory,
        response: { 200: Ok(Memory) },
        detail: { ...valueLimit(FREE_JSON_VALUES), summary: 'Write a key', description: `Replaces the value, metadata and expiry. ${CONCURRENCY}` },
      },
    )
    .patch(
      '/:key',
      async ({ auth, params, body, headers, set }) => {
        const result = await write(await resolve(auth, params as { id?: string }), { op: 'merge', key: params.key, patch: body }, headers, set)
        return presentMemory(result.row!)
      },
      {
        params: keyParams,
        headers: IfMatch,
        body: t.Unknown({ description: 'a JSON merge patch (RFC 7386) applied to the value; Content-Type application/merge-patch+json or application/json' }),
        response: { 200: Ok(Memory) },
        detail: {
          ...valueLimit(FREE_JSON_VALUES),
          summary: 'Merge-patch a value',
          description: `Metadata and expiry stay as they are. 404 when the key does not exist. ${CONCURRENCY}`,
        },
      },
    )
    .delete(
      '/:key',
      async ({ auth, params, headers, set }) => {
        const result = await write(await resolve(auth, params as { id?: string }), { op: 'delete', key: params.key }, headers, set)
        return { key: result.key, deleted: true as const, version: result.version! }
      },
      {
        params: keyParams,
        headers: IfMatch,
        response: { 200: Ok(DeletedMemory) },
        detail: { summary: 'Delete a key', description: `404 when it does not exist. ${CONCURRENCY}` },
      },
    )
}
