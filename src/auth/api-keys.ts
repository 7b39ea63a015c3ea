/** API keys: minted with 256 random bits, shown once, stored as a SHA-256 hash, revocable. */
import { randomUUIDv7 } from 'bun'
import { randomToken, sha256 } from '../crypto'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { afterShown, iso } from '../http/timestamps'
import { API_KEY_PREFIX } from './credentials'

export interface ApiKeyRow {
  id: string
  name: string
  hint: string
  created_by: string | null
  created_at: Date
  revoked_at: Date | null
}

export const presentKey = (k: ApiKeyRow) => ({
  id: k.id,
  name: k.name,
  hint: k.hint,
  created_by: k.created_by,
  created_at: iso(k.created_at)!,
  revoked_at: iso(k.revoked_at),
})

/**
 * Creates a key and returns it with its secret, the only time the secret exists outside the caller.
 * `functionId` marks a function's runtime key (see `Auth.functionId`).
 */
export async function createApiKey(tx: Tx, orgId: string, createdBy: string | null, name: string, functionId: string | null = null) {
  const secret = randomToken(API_KEY_PREFIX)
  const [row] = await tx<ApiKeyRow[]>`
    insert into api_keys (id, org_id, created_by, name, hint, hash, function_id)
    values (${randomUUIDv7()}, ${orgId}, ${createdBy}, ${name}, ${secret.slice(0, 10)}, ${sha256(secret)}, ${functionId})
    returning id, name, hint, created_by, created_at, revoked_at`
  return { ...presentKey(row!), key: secret }
}

export async function listApiKeys(sql: Sql, orgId: string, page: PageRequest, createdAfter: Date | null) {
  const matching = sql`org_id = ${orgId} ${createdAfter ? sql`and created_at >= ${afterShown(createdAfter)}` : sql``}`
  return listPage<ApiKeyRow>(sql, {
    columns: sql`id, name, hint, created_by, created_at, revoked_at`,
    from: sql`api_keys`,
    where: matching,
    page,
  })
}

/** Revokes a key of the organization; another organization's key is not_found. */
export async function revokeApiKey(sql: Sql, orgId: string, keyId: string): Promise<ApiKeyRow> {
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys set revoked_at = coalesce(revoked_at, now())
     where id = ${keyId} and org_id = ${orgId}
     returning id, name, hint, created_by, created_at, revoked_at`
  if (!row) throw errors.notFound('api key')
  return row
}

/** Revokes a key by id, whoever's it is (a function's runtime key when the function goes). */
export async function revokeKeyById(tx: Tx, keyId: string): Promise<void> {
  await tx`update api_keys set revoked_at = coalesce(revoked_at, now()) where id = ${keyId}`
}
