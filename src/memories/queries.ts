/**
 * The memories and memory_usage tables (memories/ owns them): the row type and every statement.
 * An organization's memory writes are serialized by its memory_usage row, which every write
 * locks first (lockMemoryUsage); the service (./service.ts) keeps the engine's rules.
 */
import { orgsAs } from '../account/org-queries'
import type { Plan } from '../account/plans'
import type { Sql, Tx } from '../db/client'

/** Whose memories: an organization's own (functionId null) or one function's. */
export interface MemoryScope {
  orgId: string
  functionId: string | null
}

export interface MemoryRow {
  key: string
  value: unknown
  metadata: Record<string, unknown>
  version: string | number
  size_bytes: number
  expires_at: Date | null
  created_at: Date
  updated_at: Date
}

/** A memory to write: value and metadata as JSON text, timestamps as ISO text. */
export interface MemoryWrite {
  key: string
  value: string | null
  metadata: string
  version: number
  size_bytes: number
  expires_at: string | null
  created_at: string
}

const inScope = (sql: Tx, scope: MemoryScope) => sql`org_id = ${scope.orgId} and function_id is not distinct from ${scope.functionId}`

/**
 * Takes the organization's memory lock, its `memory_usage` row (made on first use), and reads
 * its plan. Every memory write takes it first, before the changes feed's counter; a transaction
 * that records other changes before its memory writes (a catalog install) takes it at its start.
 */
export async function lockMemoryUsage(tx: Tx, orgId: string): Promise<{ plan: Plan } | null> {
  const [org] = await tx<{ plan: Plan }[]>`
    with usage as (
      insert into memory_usage (org_id) values (${orgId})
      on conflict (org_id) do update set keys = memory_usage.keys returning org_id)
    select o.plan from ${orgsAs(tx, 'o')} join usage u on u.org_id = o.id`
  return org ?? null
}

/** The scope's rows of `keys`, expired ones too (still in the table until cleanup), marked. */
export function memoriesOfKeys(tx: Tx, scope: MemoryScope, keys: string[]) {
  return tx<(MemoryRow & { expired: boolean })[]>`
    select key, value, metadata, version, size_bytes, expires_at, created_at, updated_at, coalesce(expires_at <= now(), false) as expired
      from memories where ${inScope(tx, scope)} and key = any(${keys})`
}

/** Writes (inserts or replaces) the scope's keys; the rows written. */
export function upsertMemories(tx: Tx, scope: MemoryScope, rows: MemoryWrite[]) {
  return tx<MemoryRow[]>`
    insert into memories as m (org_id, function_id, key, value, metadata, version, size_bytes, expires_at, created_at, updated_at)
    select ${scope.orgId}, ${scope.functionId}::uuid, x.key, x.value::jsonb, x.metadata::jsonb, x.version, x.size_bytes, x.expires_at, x.created_at, now()
      from jsonb_to_recordset(${tx.json(rows as never)}::jsonb)
        as x(key text, value text, metadata text, version bigint, size_bytes int, expires_at timestamptz, created_at timestamptz)
    on conflict on constraint memories_key do update set
      value = excluded.value, metadata = excluded.metadata, version = excluded.version, size_bytes = excluded.size_bytes,
      expires_at = excluded.expires_at, created_at = excluded.created_at, updated_at = now()
    returning key, value, metadata, version, size_bytes, expires_at, created_at, updated_at`
}

export async function deleteMemoryKeys(tx: Tx, scope: MemoryScope, keys: string[]): Promise<void> {
  await tx`delete from memories where ${inScope(tx, scope)} and key = any(${keys})`
}

/** Moves the organization's quota counts; the new totals. */
export async function addMemoryUsage(tx: Tx, orgId: string, keys: number, bytes: number): Promise<{ keys: string; bytes: string }> {
  const [usage] = await tx<{ keys: string; bytes: string }[]>`
    update memory_usage set keys = keys + ${keys}, bytes = bytes + ${bytes} where org_id = ${orgId} returning keys, bytes`
  return usage!
}

/** One live key of the scope. */
export async function liveMemory(sql: Tx, scope: MemoryScope, key: string): Promise<MemoryRow | undefined> {
  const [row] = await sql<MemoryRow[]>`
    select key, value, metadata, version, size_bytes, expires_at, created_at, updated_at from memories
     where ${inScope(sql, scope)} and key = ${key}
       and (expires_at is null or expires_at > now())`
  return row
}

const likePrefix = (prefix: string) => prefix.replace(/[\\%_]/g, c => `\\${c}`) + '%'

/** Live keys in byte order, after `after`, with `prefix`; `limit + 1` rows and the total. */
export async function liveMemoriesPage(sql: Tx, scope: MemoryScope, q: { prefix?: string; after: string | null; limit: number; withValues: boolean }) {
  const where = sql`${inScope(sql, scope)}
    and (expires_at is null or expires_at > now()) ${q.prefix ? sql`and key like ${likePrefix(q.prefix)}` : sql``}`
  const [rows, [count]] = await Promise.all([
    sql<MemoryRow[]>`
      select key, ${q.withValues ? sql`value` : sql`null as value`}, metadata, version, size_bytes, expires_at, created_at, updated_at
        from memories where ${where} ${q.after !== null ? sql`and key > ${q.after}` : sql``}
       order by key limit ${q.limit + 1}`,
    sql<{ total: number }[]>`select count(*)::int as total from memories where ${where}`,
  ])
  return { rows, total: count!.total }
}

/** Up to 100 organizations with expired keys. */
export async function orgsWithExpiredMemories(sql: Sql): Promise<string[]> {
  const rows = await sql<{ org_id: string }[]>`select distinct org_id from memories where expires_at <= now() limit 100`
  return rows.map(r => r.org_id)
}

/** Removes up to `max` expired keys of the organization (its usage row locked first) and moves its counts; the keys removed. */
export async function deleteExpiredOf(tx: Tx, orgId: string, max: number) {
  await tx`select 1 from memory_usage where org_id = ${orgId} for update`
  const rows = await tx<{ key: string; function_id: string | null; size_bytes: number }[]>`
    delete from memories where ctid in (
      select ctid from memories where org_id = ${orgId} and expires_at <= now() limit ${max})
    returning key, function_id, size_bytes`
  if (rows.length)
    await tx`update memory_usage set keys = keys - ${rows.length}, bytes = bytes - ${rows.reduce((n, r) => n + r.size_bytes, 0)} where org_id = ${orgId}`
  return rows
}

/** A deleted function's memories go with it, in the transaction that deletes it (quota counts moved). */
export async function deleteFunctionMemories(tx: Tx, orgId: string, functionId: string): Promise<number> {
  const [row] = await tx<{ keys: number; bytes: number }[]>`
    with locked as (select 1 from memory_usage where org_id = ${orgId} for update),
    -- referenced, so the usage row is locked before the rows go (no usage row: no memories either)
    gone as (delete from memories where org_id = ${orgId} and function_id = ${functionId} and exists (select from locked) returning size_bytes),
    counted as (select count(*)::int as keys, coalesce(sum(size_bytes), 0)::bigint as bytes from gone),
    moved as (update memory_usage u set keys = u.keys - c.keys, bytes = u.bytes - c.bytes from counted c where u.org_id = ${orgId} and c.keys > 0)
    select keys, bytes::float8 as bytes from counted`
  return row!.keys
}
