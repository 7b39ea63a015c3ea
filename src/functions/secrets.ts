/**
 * Function secrets and organization secrets: AES-GCM sealed at rest under the server key,
 * never returned after they are set (lists show keys and timestamps). Keys match
 * ^[A-Z_][A-Z0-9_]*$; the names the service injects are reserved; at most SECRETS_PER_SCOPE per
 * function and per organization. Invocations read them afresh, so a change applies from the
 * next invocation without a redeploy; a function's secret overrides the organization's.
 */
import type { AppContext } from '../context'
import { errors } from '../errors'
import { iso } from '../http/timestamps'
import { RESERVED_SECRETS, SECRET_KEY_PATTERN, SECRET_VALUE_BYTES, SECRETS_PER_SCOPE } from './limits'
import { liveFunctionId } from './queries'
import { deleteSecretRow, insertSecret, invocationSecrets, lockSecretScope, secretCount, secretExists, secretsOf, updateSecret } from './secret-queries'

/** null = the organization's secrets */
type Scope = string | null

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
  if (!(await liveFunctionId(ctx.sql, orgId, scope))) throw errors.notFound('function')
}

export async function listSecrets(ctx: AppContext, orgId: string, scope: Scope) {
  await checkScope(ctx, orgId, scope)
  const rows = await secretsOf(ctx.sql, orgId, scope)
  return rows.map(r => ({ key: r.key, created_at: iso(r.created_at)!, updated_at: iso(r.updated_at)! }))
}

/** Sets a secret (creating or replacing it); returns its key and timestamps, never the value. */
export async function putSecret(ctx: AppContext, orgId: string, scope: Scope, key: string, value: string) {
  checkSecretKey(key)
  checkValue(value)
  await checkScope(ctx, orgId, scope)
  return ctx.sql.begin(async tx => {
    await lockSecretScope(tx, orgId, scope)
    if (!(await secretExists(tx, orgId, scope, key))) {
      if ((await secretCount(tx, orgId, scope)) >= SECRETS_PER_SCOPE)
        throw errors.validation('key', `at most ${SECRETS_PER_SCOPE} secrets per ${scope === null ? 'organization' : 'function'}; delete one first`)
      const row = await insertSecret(tx, orgId, scope, key, ctx.keys.encrypt(value))
      return { key: row.key, created_at: iso(row.created_at)!, updated_at: iso(row.updated_at)!, created: true }
    }
    const row = await updateSecret(tx, orgId, scope, key, ctx.keys.encrypt(value))
    return { key: row.key, created_at: iso(row.created_at)!, updated_at: iso(row.updated_at)!, created: false }
  })
}

export async function deleteSecret(ctx: AppContext, orgId: string, scope: Scope, key: string) {
  await checkScope(ctx, orgId, scope)
  if (!(await deleteSecretRow(ctx.sql, orgId, scope, key))) throw errors.notFound('secret')
  return { key, deleted: true as const }
}

/** The env of an invocation without the reserved values: the organization's secrets overridden by the function's. */
export async function secretsForInvocation(ctx: AppContext, orgId: string, functionId: string): Promise<Record<string, string>> {
  const rows = await invocationSecrets(ctx.sql, orgId, functionId)
  const env: Record<string, string> = {}
  for (const r of rows) env[r.key] = ctx.keys.decrypt(r.value_sealed)
  return env
}
