/** The credit_codes table (credits/ owns it): a code is stored by its hash and redeemed once. */
import type { Sql, Tx } from '../db/client'

/** Stores a new code by its hash, worth `amountCents`. */
export async function insertCreditCode(sql: Sql, id: string, codeHash: Buffer, amountCents: number): Promise<void> {
  await sql`insert into credit_codes (id, code_hash, amount_cents) values (${id}, ${codeHash}, ${amountCents})`
}

/** Marks the unredeemed code of `codeHash` redeemed by the organization; its amount, or undefined if none. */
export async function redeemCodeByHash(tx: Tx, orgId: string, codeHash: Buffer): Promise<{ amount_cents: number } | undefined> {
  const [credit] = await tx<{ amount_cents: number }[]>`
    update credit_codes set redeemed_by_org = ${orgId}, redeemed_at = now()
     where code_hash = ${codeHash} and redeemed_at is null
     returning amount_cents`
  return credit
}
