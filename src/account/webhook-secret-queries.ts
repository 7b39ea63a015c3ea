/** The webhook_secrets table (account/ owns it): each organization's sealed webhook signing secret. */
import type { Sql, Tx } from '../db/client'

/** The organization's sealed secret, or undefined before its first read. */
export async function sealedWebhookSecret(sql: Sql, orgId: string): Promise<Buffer | undefined> {
  const [row] = await sql<{ secret_sealed: Buffer }[]>`select secret_sealed from webhook_secrets where org_id = ${orgId}`
  return row?.secret_sealed
}

/** Stores the organization's first secret; when another one was stored first, that one is returned instead. */
export async function insertWebhookSecret(sql: Sql, orgId: string, sealed: Buffer): Promise<Buffer> {
  const [row] = await sql<{ secret_sealed: Buffer }[]>`
    insert into webhook_secrets (org_id, secret_sealed) values (${orgId}, ${sealed})
    on conflict (org_id) do update set org_id = excluded.org_id
    returning secret_sealed`
  return row!.secret_sealed
}

/**
 * The organization's secret row, locked for the transaction, with the seconds left before it
 * may be rotated again (null when never rotated, zero or less when it may be now).
 */
export async function lockWebhookSecret(tx: Tx, orgId: string, intervalMinutes: number) {
  const [row] = await tx<{ secret_sealed: Buffer; wait_seconds: number | null }[]>`
    select secret_sealed,
           ceil(extract(epoch from rotated_at + make_interval(mins => ${intervalMinutes}) - now()))::int as wait_seconds
      from webhook_secrets where org_id = ${orgId} for update`
  return row
}

/** Replaces the secret, keeping the current one as the previous for `graceHours`. */
export async function rotateWebhookSecretTo(tx: Tx, orgId: string, sealed: Buffer, graceHours: number): Promise<void> {
  await tx`
    update webhook_secrets set
      previous_sealed = secret_sealed,
      previous_expires_at = now() + make_interval(hours => ${graceHours}),
      secret_sealed = ${sealed},
      rotated_at = now()
     where org_id = ${orgId}`
}

/** The current sealed secret and the previous one while its grace window lasts (else null). */
export async function sealedSigningSecrets(sql: Sql, orgId: string) {
  const [row] = await sql<{ secret_sealed: Buffer; previous_sealed: Buffer | null }[]>`
    select secret_sealed, case when previous_expires_at > now() then previous_sealed end as previous_sealed
      from webhook_secrets where org_id = ${orgId}`
  return row
}
