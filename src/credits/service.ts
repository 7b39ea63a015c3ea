/** Credit codes: minted by the operator, redeemed once by an owner or admin, added to the balance. */
import { randomUUIDv7 } from 'bun'
import { randomToken, sha256 } from '../crypto'
import { addCredit, creditBalanceCents } from '../account/org-queries'
import type { Sql, Tx } from '../db/client'
import { errors } from '../errors'
import { insertCreditCode, redeemCodeByHash } from './queries'

export const CREDIT_CODE_PREFIX = 'CR-'

export async function mintCreditCode(sql: Sql, amountCents: number): Promise<{ id: string; code: string }> {
  const code = randomToken(CREDIT_CODE_PREFIX, 15)
  const id = randomUUIDv7()
  await insertCreditCode(sql, id, sha256(code), amountCents)
  return { id, code }
}

export async function creditBalance(sql: Sql | Tx, orgId: string) {
  return { balance_cents: await creditBalanceCents(sql, orgId), currency: 'USD' as const }
}

/** Redeems a code for the organization; an unknown or already redeemed code is not_found. */
export async function redeemCreditCode(tx: Tx, orgId: string, code: string) {
  const credit = await redeemCodeByHash(tx, orgId, sha256(code.trim()))
  if (!credit) throw errors.notFound('credit code')
  await addCredit(tx, orgId, credit.amount_cents)
  return { redeemed_cents: Number(credit.amount_cents), ...(await creditBalance(tx, orgId)) }
}
