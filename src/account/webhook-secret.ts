/**
 * The organization's webhook signing secret. It is sealed (AES-GCM) at rest because the worker
 * must read it back to sign deliveries. It looks like a Standard Webhooks secret (`whsec_` +
 * base64), so receivers can use either the contract's HMAC (the whole string as the UTF-8 key)
 * or a Standard Webhooks verifier (the base64 part decoded).
 */
import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { ServerKeys } from '../crypto'
import { perProcess, type AppContext } from '../context'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { insertWebhookSecret, lockWebhookSecret, rotateWebhookSecretTo, sealedSigningSecrets, sealedWebhookSecret } from './webhook-secret-queries'

export const ROTATION_INTERVAL_MINUTES = 60
/** How long deliveries stay signed with the previous secret as well after a rotation. */
export const ROTATION_GRACE_HOURS = 24

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`

/** The current secret, generated on first read. */
export async function readWebhookSecret(sql: Sql, keys: ServerKeys, orgId: string): Promise<string> {
  const existing = await sealedWebhookSecret(sql, orgId)
  if (existing) return keys.decrypt(existing)
  // Two first reads at once both try to create it; the loser reads the winner's.
  return keys.decrypt(await insertWebhookSecret(sql, orgId, keys.encrypt(newSecret())))
}

/** Replaces the secret, keeping the old one valid for the grace window; at most once per interval. */
export async function rotateWebhookSecret(ctx: AppContext, orgId: string): Promise<string> {
  const { sql, keys } = ctx
  await readWebhookSecret(sql, keys, orgId)
  const secret = await sql.begin(async (tx: Tx) => {
    const row = await lockWebhookSecret(tx, orgId, ROTATION_INTERVAL_MINUTES)
    const wait = row!.wait_seconds
    if (wait !== null && wait > 0) {
      throw errors.retryLater('rate_limit_exceeded', `webhook secret: can be rotated once per ${ROTATION_INTERVAL_MINUTES} minutes`, wait)
    }
    const secret = newSecret()
    await rotateWebhookSecretTo(tx, orgId, keys.encrypt(secret), ROTATION_GRACE_HOURS)
    return secret
  })
  caches(ctx).delete(orgId)
  return secret
}

/** Every secret deliveries must be signed with now: the current one, and the previous one during its grace window. */
export async function signingSecrets(sql: Sql, keys: ServerKeys, orgId: string): Promise<string[]> {
  const row = await sealedSigningSecrets(sql, orgId)
  if (!row) return [await readWebhookSecret(sql, keys, orgId)]
  const current = keys.decrypt(row.secret_sealed)
  return row.previous_sealed ? [current, keys.decrypt(row.previous_sealed)] : [current]
}

/**
 * `signingSecrets` read (and decrypted) once per SECRETS_TTL_MS at most per process and
 * organization: each delivery would otherwise pay a query and a decryption. A rotation evicts
 * the organization at once in the process that rotated; another process may go on signing
 * with the previous secret alone for up to SECRETS_TTL_MS after it (and with the previous one
 * as well for as long past the end of its grace window).
 */
export const SECRETS_TTL_MS = 5_000
// concurrent first reads of an organization share one query
const caches = perProcess(
  ctx => new LRUCache<string, string[]>({ max: 10_000, ttl: SECRETS_TTL_MS, fetchMethod: org => signingSecrets(ctx.sql, ctx.keys, org) }),
)

export async function cachedSigningSecrets(ctx: AppContext, orgId: string): Promise<string[]> {
  return (await caches(ctx).fetch(orgId))!
}
