/**
 * Memories: every write (PUT, PATCH, DELETE, batch) is a list of operations applied by one
 * engine, all or nothing, in one transaction that also records each write in the changes
 * feed. An organization's memory writes are serialized by its `memory_usage` row, locked
 * first: checks, versions and quota counts are exact under concurrent writers.
 */
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { iso } from '../http/timestamps'
import { planDefinition } from '../account/plans'
import { recordChanges, type ChangeInput } from '../changes/record'
import { mergePatch } from './merge-patch'
import { MEMORY_VALUE_MAX_BYTES } from '../account/plans'
import { MEMORY_KEY_MAX_BYTES, MEMORY_METADATA_MAX_BYTES, type BatchOp } from './model'
import { mailEvents } from '../events'
import {
  addMemoryUsage,
  deleteExpiredOf,
  deleteMemoryKeys,
  liveMemoriesPage,
  liveMemory,
  lockMemoryUsage,
  type MemoryRow,
  type MemoryScope,
  memoriesOfKeys,
  orgsWithExpiredMemories,
  upsertMemories,
} from './queries'

/**
 * What memories ask of the functions, whose table belongs to src/functions/: a seam, because
 * functions stand above memories (deleting a function deletes its memories), so memories may
 * not import them. Plugged in by src/plugins.ts (src/functions/queries.ts).
 */
export interface MemoryFunctions {
  /** the function whose runtime key is `keyId`, deleted or not */
  ofRuntimeKey(sql: Tx, orgId: string, keyId: string): Promise<{ id: string; deleted: boolean } | undefined>
  /** the id of the organization's function `id` unless deleted */
  liveId(sql: Tx, orgId: string, id: string): Promise<string | undefined>
}

declare module '../context' {
  interface Plugins {
    /** the functions a memory scope may name, for src/memories/ */
    readonly memoryFunctions: MemoryFunctions
  }
}

/**
 * Whose memories a credential reaches at /v1/memories and through the MCP tools: a function's
 * runtime key (SERVICE_API_KEY) its own function's, by default; any other credential the
 * organization's.
 */
export async function defaultMemoryScope(ctx: AppContext, auth: Pick<Auth, 'orgId' | 'keyId'>): Promise<MemoryScope> {
  const fn = await ctx.plugins.memoryFunctions.ofRuntimeKey(ctx.sql, auth.orgId, auth.keyId)
  return { orgId: auth.orgId, functionId: fn && !fn.deleted ? fn.id : null }
}

/** An operation of the engine: the batch's three, plus a merge patch (PATCH). */
export type MemoryOp =
  | BatchOp
  | { op: 'merge'; key: string; patch: unknown; if_version?: number }
  /** set only if the key does not exist (If-None-Match: *) */
  | (Extract<BatchOp, { op: 'set' }> & { if_absent?: boolean })

export interface OpResult {
  op: 'check' | 'set' | 'delete'
  key: string
  version: number | null
  row?: MemoryRow
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/** Throws validation_error unless `key` is 1 to 512 bytes of UTF-8 without control characters. */
export function checkKey(field: string, key: string) {
  const bytes = Buffer.byteLength(key)
  if (bytes < 1 || bytes > MEMORY_KEY_MAX_BYTES) throw errors.validation(field, `must be 1 to ${MEMORY_KEY_MAX_BYTES} bytes of UTF-8`)
  if (CONTROL.test(key)) throw errors.validation(field, 'must not contain control characters')
  if (/[\ud800-\udfff]/.test(key.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))) throw errors.validation(field, 'must be valid UTF-8')
}

function encodeValue(field: string, value: unknown): string {
  const json = JSON.stringify(value)
  if (json === undefined) throw errors.validation(field, 'is required (any JSON value)')
  if (Buffer.byteLength(json) > MEMORY_VALUE_MAX_BYTES) throw errors.validation(field, `must be at most ${MEMORY_VALUE_MAX_BYTES / 1024} KB as JSON`)
  return json
}

function encodeMetadata(field: string, metadata: Record<string, unknown> | undefined): string {
  const json = JSON.stringify(metadata ?? {})
  if (Buffer.byteLength(json) > MEMORY_METADATA_MAX_BYTES) throw errors.validation(field, `must be at most ${MEMORY_METADATA_MAX_BYTES / 1024} KB as JSON`)
  return json
}

export const presentMemory = (r: MemoryRow) => ({ ...presentListItem(r, false), value: r.value })

/** A list entry: the value only when asked for. */
export const presentListItem = (r: MemoryRow, withValue: boolean) => ({
  key: r.key,
  ...(withValue && { value: r.value }),
  version: Number(r.version),
  metadata: r.metadata,
  expires_at: iso(r.expires_at),
  created_at: iso(r.created_at)!,
  updated_at: iso(r.updated_at)!,
})

const scopeName = (s: MemoryScope) => s.functionId ?? 'org'

function preconditionFailed(where: string, key: string, current: number | null, expected: string) {
  const now = current === null ? 'does not exist' : `is at version ${current}`
  return new ApiError('precondition_failed', `${where}: key ${JSON.stringify(key)} ${now}, ${expected}`, { key, current_version: current })
}

/** Keys of this scope that exist and have not expired; `expired` rows are still in the table until cleanup. */
const live = (r: (MemoryRow & { expired: boolean }) | undefined) => (r && !r.expired ? r : undefined)

interface Pending {
  key: string
  /** null: deleted */
  value: string | null
  metadata: string
  expiresAt: Date | null
  createdAt: Date | null
  change: number
}

/**
 * Applies `ops` in order, all or nothing (in `inTx` when given, as the last writes of that
 * transaction); later operations see earlier ones. In a `batch`,
 * errors name the operation (`operations[2].value`); otherwise the request's own fields
 * (`value`, `If-Match`).
 */
export async function applyMemoryOps(ctx: AppContext, scope: MemoryScope, ops: MemoryOp[], batch: boolean, inTx?: Tx): Promise<OpResult[]> {
  const field = (i: number, name: string) => (batch ? `operations[${i}].${name}` : name)
  const where = (i: number) => {
    const op = ops[i]!
    return batch ? `operations[${i}]` : 'if_absent' in op && op.if_absent ? 'If-None-Match' : 'If-Match'
  }
  // Everything that can be checked without the database is, before the transaction.
  const encoded = ops.map((op, i) => {
    checkKey(batch ? field(i, 'key') : 'key', op.key)
    if (op.op === 'set') return { value: encodeValue(field(i, 'value'), op.value), metadata: encodeMetadata(field(i, 'metadata'), op.metadata) }
    return null
  })
  const apply = async (tx: Tx): Promise<OpResult[]> => {
    const org = await lockMemoryUsage(tx, scope.orgId)
    if (!org) throw errors.notFound('organization')
    const keys = [...new Set(ops.map(o => o.key))]
    const existing = await memoriesOfKeys(tx, scope, keys)
    const state = new Map(existing.map(r => [r.key, r]))
    const current = new Map<string, { version: number; value: unknown } | null>(
      keys.map(k => [k, live(state.get(k)) ? { version: Number(state.get(k)!.version), value: state.get(k)!.value } : null]),
    )
    const pending = new Map<string, Pending>()
    const changes: ChangeInput[] = []
    const out: { op: OpResult['op']; key: string; changeIndex: number | null; version: number | null }[] = []
    const now = new Date()

    ops.forEach((op, i) => {
      const cur = current.get(op.key)!
      const version = cur?.version ?? null
      if (op.op === 'check') {
        if (op.exists === false && cur) throw preconditionFailed(where(i), op.key, version, 'expected not to exist')
        if (op.exists === true && !cur) throw preconditionFailed(where(i), op.key, version, 'expected to exist')
        if (op.version !== undefined && version !== op.version) throw preconditionFailed(where(i), op.key, version, `expected version ${op.version}`)
        out.push({ op: 'check', key: op.key, changeIndex: null, version })
        return
      }
      if (op.if_version !== undefined && version !== op.if_version) throw preconditionFailed(where(i), op.key, version, `expected version ${op.if_version}`)
      if (op.op === 'set' && 'if_absent' in op && op.if_absent && cur)
        throw preconditionFailed(where(i), op.key, version, 'expected not to exist (If-None-Match: *)')
      if (op.op === 'delete') {
        if (!cur) throw errors.notFound(`memory ${JSON.stringify(op.key)}`)
        pending.set(op.key, { key: op.key, value: null, metadata: '{}', expiresAt: null, createdAt: null, change: changes.length })
        changes.push(memoryChange(scope, 'memory.deleted', op.key))
        current.set(op.key, null)
        out.push({ op: 'delete', key: op.key, changeIndex: changes.length - 1, version })
        return
      }
      const prior = pending.get(op.key)
      const row = live(state.get(op.key))
      let value: string
      let metadata: string
      let expiresAt: Date | null
      if (op.op === 'merge') {
        if (!cur) throw errors.notFound(`memory ${JSON.stringify(op.key)}`)
        value = encodeValue(batch ? field(i, 'patch') : 'body', mergePatch(cur.value, op.patch))
        // a patch changes the value only: metadata and expiry stay
        metadata = prior?.metadata ?? JSON.stringify(row?.metadata ?? {})
        expiresAt = prior ? prior.expiresAt : (row?.expires_at ?? null)
      } else {
        value = encoded[i]!.value
        metadata = encoded[i]!.metadata
        expiresAt = op.ttl_seconds ? new Date(now.getTime() + op.ttl_seconds * 1000) : null
      }
      const createdAt = cur ? (prior?.createdAt ?? row?.created_at ?? now) : now
      pending.set(op.key, { key: op.key, value, metadata, expiresAt, createdAt, change: changes.length })
      changes.push(memoryChange(scope, 'memory.set', op.key))
      current.set(op.key, { version: -1, value: JSON.parse(value) })
      out.push({ op: 'set', key: op.key, changeIndex: changes.length - 1, version: null })
    })

    const seqs = await recordChanges(tx, changes)
    // The version of a write is the seq of its change; a key written twice keeps the later one.
    for (const o of out) if (o.op === 'set') o.version = seqs[o.changeIndex!]!
    const writes = [...pending.values()]
    const sets = writes.filter(w => w.value !== null)
    const deletes = writes.filter(w => w.value === null).map(w => w.key)
    let written: MemoryRow[] = []
    if (sets.length) {
      const rows = sets.map(w => ({
        key: w.key,
        value: w.value,
        metadata: w.metadata,
        version: seqs[w.change]!,
        size_bytes: Buffer.byteLength(w.value!) + Buffer.byteLength(w.metadata),
        expires_at: w.expiresAt?.toISOString() ?? null,
        created_at: w.createdAt!.toISOString(),
      }))
      written = await upsertMemories(tx, scope, rows)
    }
    if (deletes.length) await deleteMemoryKeys(tx, scope, deletes)
    // Quota: expired rows still count until the cleanup job removes them (and moves the counts).
    const before = new Map(existing.map(r => [r.key, r.size_bytes]))
    let dKeys = 0
    let dBytes = 0
    for (const w of writes) {
      const had = before.get(w.key)
      const size = w.value === null ? null : Buffer.byteLength(w.value) + Buffer.byteLength(w.metadata)
      dKeys += (size === null ? 0 : 1) - (had === undefined ? 0 : 1)
      dBytes += (size ?? 0) - (had ?? 0)
    }
    if (dKeys || dBytes) {
      const usage = await addMemoryUsage(tx, scope.orgId, dKeys, dBytes)
      const limits = planDefinition(org.plan).limits
      if (dKeys > 0 && Number(usage.keys) > limits.memory_keys_max) {
        throw new ApiError('quota_exceeded', `memories: the ${org.plan} plan keeps at most ${limits.memory_keys_max} keys`, {
          limit: 'memory_keys_max',
          max: limits.memory_keys_max,
        })
      }
      if (dBytes > 0 && Number(usage.bytes) > limits.memory_storage_mb * 1024 * 1024) {
        throw new ApiError('quota_exceeded', `memories: the ${org.plan} plan keeps at most ${limits.memory_storage_mb} MB`, {
          limit: 'memory_storage_mb',
          max: limits.memory_storage_mb,
        })
      }
    }
    const byKey = new Map(written.map(r => [r.key, r]))
    return out.map(o => ({ op: o.op, key: o.key, version: o.version, row: o.op === 'set' ? byKey.get(o.key) : undefined }))
  }
  // In the caller's transaction (an install), the caller signals after its commit.
  if (inTx) return apply(inTx)
  const results = await ctx.sql.begin(apply)
  if (results.some(r => r.op !== 'check')) mailEvents(ctx).emitChange(scope.orgId)
  return results
}

function memoryChange(scope: MemoryScope, type: string, key: string): ChangeInput {
  return { orgId: scope.orgId, type, resource: { type: 'memory', id: key }, data: { key, scope: scopeName(scope) } }
}

/** One key, or 404 (expired keys are gone at once). */
export async function getMemory(sql: Tx, scope: MemoryScope, key: string): Promise<MemoryRow> {
  checkKey('key', key)
  const row = await liveMemory(sql, scope, key)
  if (!row) throw errors.notFound(`memory ${JSON.stringify(key)}`)
  return row
}

/** Live keys in byte order, after `after`, with `prefix`; `limit + 1` rows and the total. */
export async function listMemories(sql: Tx, scope: MemoryScope, q: { prefix?: string; after: string | null; limit: number; withValues: boolean }) {
  if (q.prefix) checkKey('prefix', q.prefix)
  return liveMemoriesPage(sql, scope, q)
}

/**
 * The cleanup job's part: removes expired keys, moves the quota counts and records a
 * `memory.expired` change per key, one organization per transaction (its usage row first, as
 * every memory write does).
 */
export async function deleteExpiredMemories(ctx: AppContext, max = 5000): Promise<number> {
  let total = 0
  for (const org_id of await orgsWithExpiredMemories(ctx.sql)) {
    const gone = await ctx.sql.begin(async tx => {
      const rows = await deleteExpiredOf(tx, org_id, max)
      if (!rows.length) return 0
      await recordChanges(
        tx,
        rows.map(r => memoryChange({ orgId: org_id, functionId: r.function_id }, 'memory.expired', r.key)),
      )
      return rows.length
    })
    if (gone) mailEvents(ctx).emitChange(org_id)
    total += gone
  }
  return total
}
