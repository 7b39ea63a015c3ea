/** The x402_challenges table: the row type and the statements of challenges themselves. */
import type { Hex } from 'viem'
import type { Sql, Tx } from '../db/client'
import type { Network } from './networks'

export interface ChallengeRow {
  id: string
  org_id: string
  network: Network
  amount: string
  asset: `0x${string}`
  pay_to: `0x${string}`
  description: string
  max_timeout_seconds: number
  interaction_id: string
  challenge_step_id: string
  challenge_nonce: string
  authorization_nonce: Hex
  expires_at: Date
  status: 'pending' | 'settled' | 'failed'
  settle_tx: string | null
  failure_reason: string | null
  failure_category: string | null
  failure_reasons: string[] | null
  settled_at: Date | null
  created_at: Date
  updated_at: Date
}

/** What a new challenge is made of: everything but its payee wallet, read from its default payout address. */
export interface ChallengeValues {
  id: string
  orgId: string
  network: Network
  amount: string
  asset: string
  description: string
  maxTimeoutSeconds: number
  interactionId: string
  stepId: string
  nonce: string
  authorizationNonce: Hex
  expiresIn: number
}

/**
 * Inserts a challenge paid to the network's default payout address, in one statement; none when
 * the network has no default. `commitWithoutFlush` turns synchronous_commit off for the
 * transaction (see `createChallenge` for when that is safe).
 */
export async function insertChallenge(sql: Sql | Tx, c: ChallengeValues, commitWithoutFlush: boolean): Promise<ChallengeRow | undefined> {
  const [row] = await sql<ChallengeRow[]>`
    with commit_setting as (select ${commitWithoutFlush ? sql`set_config('synchronous_commit', 'off', true)` : sql`null`})
    insert into x402_challenges (id, org_id, network, amount, asset, pay_to, description, max_timeout_seconds,
                                 interaction_id, challenge_step_id, challenge_nonce, authorization_nonce, expires_at)
    select ${c.id}, ${c.orgId}, ${c.network}, ${c.amount}, ${c.asset}, p.address, ${c.description},
           ${c.maxTimeoutSeconds}, ${c.interactionId}, ${c.stepId}, ${c.nonce}, ${c.authorizationNonce},
           now() + make_interval(secs => ${c.expiresIn})
      from x402_payout_addresses p, commit_setting where p.org_id = ${c.orgId} and p.network = ${c.network} and p.is_default
    returning *, amount::text as amount`
  return row
}

/** Any organization's challenge (the payer's view needs it; reads by the payee use `getOwnChallenge`); `lock` takes it for update. */
export async function findChallenge(sql: Sql | Tx, id: string, opts: { lock?: boolean } = {}): Promise<ChallengeRow | null> {
  const [row] = await sql<ChallengeRow[]>`
    select *, amount::text as amount from x402_challenges where id = ${id} ${opts.lock ? sql`for update` : sql``}`
  return row ?? null
}

/** The organization's challenges by id, in any order, for readers that batch (GraphQL). */
export async function challengesByIds(sql: Sql | Tx, orgId: string, ids: readonly string[]): Promise<ChallengeRow[]> {
  return sql<ChallengeRow[]>`select *, amount::text as amount from x402_challenges where id = any(${ids}::uuid[]) and org_id = ${orgId}`
}

/** Deletes a challenge (an email challenge whose message never went out). */
export async function deleteChallenge(tx: Tx, id: string): Promise<void> {
  await tx`delete from x402_challenges where id = ${id}`
}

/** The challenge's state a claim decides on, with a claim already made on it (a settlement), if any. */
export type ChallengeState = Pick<
  ChallengeRow,
  'status' | 'settle_tx' | 'settled_at' | 'updated_at' | 'failure_reason' | 'failure_category' | 'failure_reasons' | 'expires_at'
> & { claim_id: string | null; claim_payer: string | null; claim_nonce: string | null }

/** Locks the challenge's row for the claim's transaction (sent at the call). */
export const lockChallenge = (tx: Tx, id: string) => tx`select from x402_challenges where id = ${id} for update`.execute()

/** The challenge's state and its existing claim (sent at the call). */
export const challengeStateWithClaim = (tx: Tx, id: string) =>
  tx<ChallengeState[]>`
    select c.status, c.settle_tx, c.settled_at, c.updated_at, c.failure_reason, c.failure_category, c.failure_reasons, c.expires_at,
           s.id as claim_id, s.payer as claim_payer, s.nonce as claim_nonce
      from x402_challenges c left join x402_settlements s on s.challenge_id = c.id where c.id = ${id}`.execute()

/** Fails the challenge on the payee's settle caps (sent at the call). */
export const failChallengeOnCaps = (tx: Tx, id: string, reasons: string[]) =>
  tx`
    update x402_challenges set status = 'failed', failure_reason = ${reasons[0]!}, failure_category = 'cap', failure_reasons = ${reasons}, updated_at = now()
     where id = ${id}`.execute()
