/**
 * The inbound_receipts table (mail/ owns it): the digests of the messages stored lately, by which
 * a message sent again is recognized (./receipts.ts says how).
 */
import type { Tx } from '../../db/client'

/** How long a receipt is kept: a client retrying after a lost 250 does so within minutes or hours. */
export const RESEND_WINDOW = '1 day'

/**
 * Inserts the receipts of `keys` (hex digests) that no one holds; returns those inserted. A key
 * held by a transaction not yet committed waits for its commit.
 */
export async function insertReceipts(tx: Tx, keys: string[]): Promise<string[]> {
  const rows = await tx<{ key: string }[]>`
    insert into inbound_receipts (digest) select decode(k, 'hex') from unnest(${keys}::text[]) k
    on conflict do nothing returning encode(digest, 'hex') as key`
  return rows.map(r => r.key)
}

/** Gives the receipt back: nothing of the message was stored (every copy refused), so its resend must be taken. */
export async function releaseReceipt(tx: Tx, digest: Buffer): Promise<void> {
  await tx`delete from inbound_receipts where digest = ${digest}`
}

/** Deletes the receipts past RESEND_WINDOW (the cleanup job). */
export async function pruneReceipts(sql: Tx): Promise<number> {
  return (await sql`delete from inbound_receipts where received_at < now() - ${RESEND_WINDOW}::interval`).count
}
