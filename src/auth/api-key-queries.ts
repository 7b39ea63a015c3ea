/** The api_keys table (auth/ owns it): its row types and every statement on it. */
import type postgres from 'postgres'
import { membershipsAs } from '../account/membership-queries'
import { orgsAs, type OrgRow } from '../account/org-queries'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { Role } from './principal'

/** A key as the API lists it (never its hash). */
export interface ApiKeyRow {
  id: string
  name: string
  hint: string
  created_by: string | null
  created_at: Date
  revoked_at: Date | null
}

/** The columns of `ApiKeyRow`, as every statement that answers one selects them. */
const keyColumns = (sql: Tx): postgres.Fragment => sql`id, name, hint, created_by, created_at, revoked_at`

export async function insertApiKey(
  tx: Tx,
  key: { id: string; orgId: string; createdBy: string | null; name: string; hint: string; hash: Buffer; functionId: string | null },
): Promise<ApiKeyRow> {
  const [row] = await tx<ApiKeyRow[]>`
    insert into api_keys (id, org_id, created_by, name, hint, hash, function_id)
    values (${key.id}, ${key.orgId}, ${key.createdBy}, ${key.name}, ${key.hint}, ${key.hash}, ${key.functionId})
    returning ${keyColumns(tx)}`
  return row!
}

/** A page of the organization's keys, newest first, revoked ones included; only those created at or after `createdFrom` if given. */
export function apiKeysPage(sql: Sql, orgId: string, page: PageRequest, createdFrom: Date | null) {
  const matching = sql`org_id = ${orgId} ${createdFrom ? sql`and created_at >= ${createdFrom}` : sql``}`
  return listPage<ApiKeyRow>(sql, { columns: keyColumns(sql), from: sql`api_keys`, where: matching, page })
}

/** Revokes the organization's key `keyId` (a revoked key keeps its first revocation time); undefined if it has no such key. */
export async function revokeOrgApiKey(sql: Sql, orgId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys set revoked_at = coalesce(revoked_at, now())
     where id = ${keyId} and org_id = ${orgId}
     returning ${keyColumns(sql)}`
  return row
}

/** Revokes a key by id, whoever's it is (a function's runtime key when the function goes). */
export async function revokeKeyById(tx: Tx, keyId: string): Promise<void> {
  await tx`update api_keys set revoked_at = coalesce(revoked_at, now()) where id = ${keyId}`
}

/** A key not revoked, with what a credential needs of its organization and of its creator's membership. */
export interface ActiveKeyRow extends Pick<OrgRow, 'plan' | 'api_per_minute_override'> {
  id: string
  org_id: string
  created_by: string | null
  hash: Buffer
  /** the creator's role now; null when the key has no creator or they left */
  role: Role | null
  function_id: string | null
}

/** The key not revoked whose SHA-256 is `hash`, in one round trip with its organization's plan and its creator's role. */
export async function activeApiKeyByHash(sql: Sql, hash: Buffer): Promise<ActiveKeyRow | undefined> {
  const [row] = await sql<ActiveKeyRow[]>`
    select k.id, k.org_id, k.created_by, k.hash, k.function_id, o.plan, o.api_per_minute_override, m.role
      from api_keys k
      join ${orgsAs(sql, 'o')} on o.id = k.org_id
      left join ${membershipsAs(sql, 'm')} on m.org_id = k.org_id and m.user_id = k.created_by
     where k.hash = ${hash} and k.revoked_at is null`
  return row
}
