/** API keys: minted with 256 random bits, shown once, stored as a SHA-256 hash, revocable. */
import { randomUUIDv7 } from 'bun'
import { randomToken, sha256 } from '../crypto'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { afterShown, iso } from '../http/timestamps'
import { apiKeysPage, insertApiKey, revokeOrgApiKey, type ApiKeyRow } from './api-key-queries'
import { API_KEY_PREFIX } from './credentials'

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
  const row = await insertApiKey(tx, {
    id: randomUUIDv7(),
    orgId,
    createdBy,
    name,
    hint: secret.slice(0, 10),
    hash: sha256(secret),
    functionId,
  })
  return { ...presentKey(row), key: secret }
}

/** A page of the organization's keys; `createdAfter` keeps those created after that instant. */
export function listApiKeys(sql: Sql, orgId: string, page: PageRequest, createdAfter: Date | null) {
  return apiKeysPage(sql, orgId, page, createdAfter && afterShown(createdAfter))
}

/** Revokes a key of the organization; another organization's key is not_found. */
export async function revokeApiKey(sql: Sql, orgId: string, keyId: string): Promise<ApiKeyRow> {
  const row = await revokeOrgApiKey(sql, orgId, keyId)
  if (!row) throw errors.notFound('api key')
  return row
}
