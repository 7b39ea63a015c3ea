/**
 * The function_secrets table (functions/ owns it): every statement on it. A scope is a function's
 * id, or null for the organization's own secrets.
 */
import type { Sql, Tx } from '../db/client'

/** A secret as lists show it: never its value. */
export interface SecretRow {
  key: string
  created_at: Date
  updated_at: Date
}

const scopeFilter = (sql: Tx, scope: string | null) => (scope === null ? sql`function_id is null` : sql`function_id = ${scope}`)

/** The scope's secrets by key. */
export function secretsOf(sql: Sql, orgId: string, scope: string | null): Promise<SecretRow[]> {
  return sql<SecretRow[]>`
    select key, created_at, updated_at from function_secrets where org_id = ${orgId} and ${scopeFilter(sql, scope)} order by key`
}

/** Takes the scope's lock until the transaction ends: one writer per scope at a time, so the cap holds under concurrent writes. */
export async function lockSecretScope(tx: Tx, orgId: string, scope: string | null): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`secrets:${orgId}:${scope ?? 'org'}`}, 0))`
}

export async function secretExists(tx: Tx, orgId: string, scope: string | null, key: string): Promise<boolean> {
  const [existing] = await tx`select 1 from function_secrets where org_id = ${orgId} and ${scopeFilter(tx, scope)} and key = ${key}`
  return existing !== undefined
}

export async function secretCount(tx: Tx, orgId: string, scope: string | null): Promise<number> {
  const [count] = await tx<{ n: number }[]>`select count(*)::int as n from function_secrets where org_id = ${orgId} and ${scopeFilter(tx, scope)}`
  return count!.n
}

export async function insertSecret(tx: Tx, orgId: string, scope: string | null, key: string, valueSealed: Buffer): Promise<SecretRow> {
  const [row] = await tx<SecretRow[]>`
    insert into function_secrets (org_id, function_id, key, value_sealed) values (${orgId}, ${scope}, ${key}, ${valueSealed})
    returning key, created_at, updated_at`
  return row!
}

/** Replaces the value of an existing secret. */
export async function updateSecret(tx: Tx, orgId: string, scope: string | null, key: string, valueSealed: Buffer): Promise<SecretRow> {
  const [row] = await tx<SecretRow[]>`
    update function_secrets set value_sealed = ${valueSealed}, updated_at = now()
     where org_id = ${orgId} and ${scopeFilter(tx, scope)} and key = ${key}
     returning key, created_at, updated_at`
  return row!
}

/** Deletes a secret of the scope; whether there was one. */
export async function deleteSecretRow(sql: Sql, orgId: string, scope: string | null, key: string): Promise<boolean> {
  const [row] = await sql`delete from function_secrets where org_id = ${orgId} and ${scopeFilter(sql, scope)} and key = ${key} returning key`
  return row !== undefined
}

/** The sealed secrets an invocation of the function sees: the organization's first, then the function's own, which override them. */
export function invocationSecrets(sql: Sql, orgId: string, functionId: string): Promise<{ key: string; value_sealed: Buffer; own: boolean }[]> {
  return sql<{ key: string; value_sealed: Buffer; own: boolean }[]>`
    select key, value_sealed, function_id is not null as own from function_secrets
     where org_id = ${orgId} and (function_id is null or function_id = ${functionId})
     order by own`
}
