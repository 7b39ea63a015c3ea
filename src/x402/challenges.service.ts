/**
 * Challenges: what a payee asks to be paid. Everything a payer signs against comes from the
 * stored row (payee wallet, asset, amount, network, nonce binding), never from what a client
 * sends back later.
 */
import { randomUUIDv7 } from 'bun'
import { randomBytes } from 'node:crypto'
import { encodeAbiParameters, keccak256, type Hex } from 'viem'
import type { Sql, Tx } from '../db/client'
import { findChallenge, insertChallenge, type ChallengeRow } from './challenge-queries'
import { errors } from '../errors'
import { networkInfo, type Network } from './networks'
import { noPayoutAddress } from './payout.service'

/**
 * The x402 client signs validAfter = now - 600 s and validBefore = now + maxTimeoutSeconds. With
 * 300 s that window is 900 s wide (at most 24 h) and leaves 300 s of headroom when signed (at
 * least 60 s must remain at settlement).
 */
export const MAX_TIMEOUT_SECONDS = 300

/** keccak256(abi.encode(string interaction_id, string challenge_step_id, bytes32 challenge_nonce)): the EIP-3009 nonce the payer signs. */
export function authorizationNonce(interactionId: string, challengeStepId: string, challengeNonce: string): Hex {
  return keccak256(encodeAbiParameters([{ type: 'string' }, { type: 'string' }, { type: 'bytes32' }], [interactionId, challengeStepId, `0x${challengeNonce}`]))
}

/** The x402 v1 `PaymentRequirements` of a challenge, as the spec shows them. */
export function paymentRequirements(c: ChallengeRow) {
  const info = networkInfo(c.network)
  return {
    scheme: 'exact' as const,
    network: c.network,
    maxAmountRequired: c.amount,
    payTo: c.pay_to,
    asset: c.asset,
    resource: `x402:challenge:${c.id}`,
    description: c.description,
    mimeType: 'application/json',
    maxTimeoutSeconds: c.max_timeout_seconds,
    extra: { name: info.eip712.name, version: info.eip712.version },
  }
}

/** Where any x402 client pays the challenge with no account here (`GET /x402/pay/{id}`, stock-client.routes.ts). */
export const payUrl = (publicUrl: string, id: string) => `${publicUrl}/x402/pay/${id}`

export function presentChallenge(c: ChallengeRow, publicUrl: string) {
  return {
    id: c.id,
    status: c.status,
    network: c.network,
    amount: c.amount,
    asset: c.asset,
    pay_to: c.pay_to,
    description: c.description,
    payment_requirements: paymentRequirements(c),
    pay_url: payUrl(publicUrl, c.id),
    nonce_binding: { interaction_id: c.interaction_id, challenge_step_id: c.challenge_step_id, challenge_nonce: c.challenge_nonce },
    authorization_nonce: c.authorization_nonce,
    expires_at: c.expires_at.toISOString(),
    settle_tx: c.settle_tx,
    settled_at: c.settled_at?.toISOString() ?? null,
    failure_reason: c.failure_reason,
    failure_category: c.failure_category,
    reasons: c.failure_reasons,
    created_at: c.created_at.toISOString(),
  }
}

export interface NewChallenge {
  amount: string
  network: Network
  description?: string
  expires_in?: number
}

/**
 * Creates a challenge paid to the network's default payout address (422 no_payout_address without
 * one), in one statement.
 *
 * With `commitWithoutFlush`, for a transaction that writes nothing else with effects outside
 * it (the API's create, not the email flow's, which sends mail), the transaction commits without
 * waiting for its WAL flush (synchronous_commit off, for it alone). A challenge is an offer:
 * nothing durable comes of it without a later durable commit (a claim, a settlement), whose
 * flush writes out the WAL before it, this challenge included. What a database crash can lose is
 * a challenge created in the moments before it (PostgreSQL flushes within three
 * wal_writer_delay, 600 ms by default), whose payer then gets 404 and asks for a new one; never a
 * payment.
 */
export async function createChallenge(
  sql: Sql | Tx,
  orgId: string,
  input: NewChallenge,
  interactionDomain: string,
  opts: { commitWithoutFlush?: boolean } = {},
): Promise<ChallengeRow> {
  const id = randomUUIDv7()
  const interactionId = `${id}@${interactionDomain}`
  const stepId = crypto.randomUUID()
  const nonce = randomBytes(32).toString('hex')
  const row = await insertChallenge(
    sql,
    {
      id,
      orgId,
      network: input.network,
      amount: input.amount,
      asset: networkInfo(input.network).usdc,
      description: input.description ?? '',
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      interactionId,
      stepId,
      nonce,
      authorizationNonce: authorizationNonce(interactionId, stepId, nonce),
      expiresIn: input.expires_in ?? 300,
    },
    Boolean(opts.commitWithoutFlush),
  )
  if (!row) throw noPayoutAddress(input.network)
  return row
}

/** The organization's own challenge, or 404. */
export async function getOwnChallenge(sql: Sql | Tx, orgId: string, id: string): Promise<ChallengeRow> {
  const row = await findChallenge(sql, id)
  if (!row || row.org_id !== orgId) throw errors.notFound('challenge')
  return row
}

// GraphQL's batched reads (src/graphql/loaders.ts) import it from here
