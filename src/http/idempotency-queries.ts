/**
 * The idempotency_keys table (http/ owns it): a key's record of the outcome of its request,
 * sealed, until it expires. The rules (locking, replaying, sealing) are in ./idempotency.ts.
 */
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'

export const IDEMPOTENCY_TTL_HOURS = 24

/** A key's record, as a replay reads it. */
export interface StoredRecord {
  request_hash: string
  response_status: number
  response_sealed: Buffer
}

/** The live record of a key, if any; not awaited, so it can go out with other statements. */
export const lookupRecord = (sql: Tx, scope: string, key: string) => sql<StoredRecord[]>`
  select request_hash, response_status, response_sealed from idempotency_keys
   where scope = ${scope} and key = ${key} and expires_at > now()`

/** Takes the transaction's advisory lock of `lockKey` without waiting (`locked`: whether it was free); not awaited. */
export const tryKeyLock = (tx: Tx, lockKey: string) => tx<{ locked: boolean }[]>`select pg_try_advisory_xact_lock(hashtextextended(${lockKey}, 0)) as locked`

/** Records the outcome of a request under its key (replacing an expired record); not awaited. */
export const recordOutcome = (tx: Tx, r: { scope: string; key: string; requestHash: string; status: number; sealed: Buffer }) => tx`
  insert into idempotency_keys (scope, key, request_hash, response_status, response_sealed, expires_at)
  values (${r.scope}, ${r.key}, ${r.requestHash}, ${r.status}, ${r.sealed},
          now() + make_interval(hours => ${IDEMPOTENCY_TTL_HOURS}))
  on conflict (scope, key) do update set
    request_hash = excluded.request_hash, response_status = excluded.response_status,
    response_sealed = excluded.response_sealed, created_at = now(), expires_at = excluded.expires_at`

/** Whether a live record of the key exists, as a condition of the enclosing statement. */
export const isKeyRecorded = (sql: Tx, scope: string, key: string): postgres.Fragment =>
  sql`exists (select 1 from idempotency_keys where scope = ${scope} and key = ${key} and expires_at > now())`

/** The keys of `keys` (pairs of scope and key) that have a live record; not awaited, so it can go out with other statements. */
export const recordedKeys = (sql: Tx, keys: { scope: string; key: string }[]) => sql<{ scope: string; key: string }[]>`
  select scope, key from idempotency_keys
   where (scope, key) in (select * from unnest(${keys.map(k => k.scope)}::text[], ${keys.map(k => k.key)}::text[])) and expires_at > now()`

/** Records the 200 answers of several requests (sealed by the caller), replacing expired records; not awaited. */
export const recordResponses = (sql: Tx, rows: { scope: string; key: string; requestHash: string; sealed: Buffer }[]) => sql`
  insert into idempotency_keys (scope, key, request_hash, response_status, response_sealed, expires_at)
  select scope, key, hash, 200, decode(sealed, 'hex'), now() + make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
    from unnest(${rows.map(r => r.scope)}::text[], ${rows.map(r => r.key)}::text[], ${rows.map(r => r.requestHash)}::text[],
                ${rows.map(r => r.sealed.toString('hex'))}::text[]) as k(scope, key, hash, sealed)
  on conflict (scope, key) do update set
    request_hash = excluded.request_hash, response_status = excluded.response_status,
    response_sealed = excluded.response_sealed, created_at = now(), expires_at = excluded.expires_at`

/** Forgets the record of a key, so that a retry performs the request anew (nothing was done). */
export async function releaseKey(sql: Tx, scope: string, key: string): Promise<void> {
  await sql`delete from idempotency_keys where scope = ${scope} and key = ${key}`
}

/** Deletes the expired records; returns how many. */
export async function pruneIdempotencyKeys(sql: Sql): Promise<number> {
  return (await sql`delete from idempotency_keys where expires_at < now()`).count
}
