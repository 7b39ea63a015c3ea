/**
 * Function secrets and organization secrets: AES-GCM sealed at rest under the server key,
 * never returned after they are set (lists show keys and timestamps). Keys match
 * ^[A-Z_][A-Z0-9_]*$; the names the service injects are reserved; at most SECRETS_PER_SCOPE per
 * function and per organization. Invocations read them afresh, so a change applies from the
 * next invocation without a redeploy; a function's secret overrides the organization's.
 */
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { errors } from '../errors'
import { iso } from '../http/timestamps'
import { RESERVED_SECRETS, SECRET_KEY_PATTERN, SECRET_VALUE_BYTES, SECRETS_PER_SCOPE } from './limits'

/** null = the organization's secrets */
type Scope = string | null

const scopeFilter = (sql: Tx, scope: Scope) => (scope === null ? sql`function_id is null` : sql`function_id = ${scope}`)

export function checkSecretKey(key: string) {
  if (!SECRET_KEY_PATTERN.test(key)) throw errors.validation(`key ${JSON.stringify(key.slice(0, 100))}`, 'must match ^[A-Z_][A-Z0-9_]*$')
  if ((RESERVED_SECRETS as readonly string[]).includes(key))
    throw errors.validation(`key ${key}`, `is reserved: the service sets ${RESERVED_SECRETS.join(', ')} itself`)
}

function checkValue(value: string) {
  const bytes = Buffer.byteLength(value)
  if (bytes > SECRET_VALUE_BYTES) throw errors.validation('value', `is ${bytes} bytes; at most ${SECRET_VALUE_BYTES}`)
}

/** A function's secrets exist only while it does: a deleted or another organization's function is not_found. */
async function checkScope(ctx: AppContext, orgId: string, scope: Scope) {
  if (scope === null) return
  const [live] = await ctx.sql`select 1 from functions where id = ${scope} and org_id = ${orgId} and deleted_at is null`
  if (!live) throw errors.notFound('function')
}

export async function listSecrets(ctx: AppContext, orgId: string, scope: Scope) {
  await checkScope(ctx, orgId, scope)
  const rows = await ctx.sql<{ key: string; created_at: Date; updated_at: Date }[]>`
    select key, created_at, updated_at from function_secrets where org_id = ${orgId} and ${scopeFilter(ctx.sql, scope)} order by key`
  return rows.map(r => ({ key: r.key, created_at: iso(r.created_at)!, updated_at: iso(r.updated_at)! }))
}

/** Sets a secret (creating or replacing it); returns its key and timestamps, never the value. */
export async function putSecret(ctx: AppContext, orgId: string, scope: Scope, key: string, value: string) {
  checkSecretKey(key)
  checkValue(value)
  await checkScope(ctx, orgId, scope)
  return ctx.sql.begin(async tx => {
    // one writer per scope at a time, so the cap holds under concurrent writes
    await tx`select pg_advisory_xact_lock(hashtextextended(${`secrets:${orgId}:${scope ?? 'org'}`}, 0))`
    const [existing] = await tx`select 1 from function_secrets where org_id = ${orgId} and ${scopeFilter(tx, scope)} and key = ${key}`
    if (!existing) {
      const [count] = await tx<{ n: number }[]>`select count(*)::int as n from function_secrets where org_id = ${orgId} and ${scopeFilter(tx, scope)}`
      if (count!.n >= SECRETS_PER_SCOPE)
        throw errors.validation('key', `at most ${SECRETS_PER_SCOPE} secrets per ${scope === null ? 'organization' : 'function'}; delete one first`)
      const [row] = await tx<{ key: string; created_at: Date; updated_at: Date }[]>`
        insert into function_secrets (org_id, function_id, key, value_sealed) values (${orgId}, ${scope}, ${key}, ${ctx.keys.encrypt(value)})
        returning key, created_at, updated_at`
      return { key: row!.key, created_at: iso(row!.created_at)!, updated_at: iso(row!.updated_at)!, created: true }
    }
    const [row] = await tx<{ key: string; created_at: Date; updated_at: Date }[]>`
      update function_secrets set value_sealed = ${ctx.keys.encrypt(value)}, updated_at = now()
       where org_id = ${orgId} and ${scopeFilter(tx, scope)} and key = ${key}
       returning key, created_at, updated_at`
    return { key: row!.key, created_at: iso(row!.created_at)!, updated_at: iso(row!.updated_at)!, created: false }
  })
}

export async function deleteSecret(ctx: AppContext, orgId: string, scope: Scope, key: string) {
  await checkScope(ctx, orgId, scope)
  const [row] = await ctx.sql`delete from function_secrets where org_id = ${orgId} and ${scopeFilter(ctx.sql, scope)} and key = ${key} returning key`
  if (!row) throw errors.notFound('secret')
  return { key, deleted: true as const }
}

/** The env of an invocation without the reserved values: the organization's secrets overridden by the function's. */
export async function secretsForInvocation(ctx: AppContext, orgId: string, functionId: string): Promise<Record<string, string>> {
  const rows = await ctx.sql<{ key: string; value_sealed: Buffer; own: boolean }[]>`
    select key, value_sealed, function_id is not null as own from function_secrets
     where org_id = ${orgId} and (function_id is null or function_id = ${functionId})
     order by own`
  const env: Record<string, string> = {}
  for (const r of rows) env[r.key] = ctx.keys.decrypt(r.value_sealed)
  return env
}
