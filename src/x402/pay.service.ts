/**
 * Paying a challenge: the one path shared by `POST /v1/x402/challenges/{id}/pay`, the stock-client
 * path and (later) the email-native flow. Order: the challenge's state (settled returns the
 * original receipt, expired is refused), our own verification against the stored challenge,
 * the payer's spend policy, then the claim with the payee's settle caps, and settlement.
 */
import { randomUUIDv7 } from 'bun'
import type { ReservedSql } from 'postgres'
import type { AppContext } from '../context'
import { enqueue } from '../jobs/queue'
import { ApiError, errors } from '../http/errors'
import { paymentRequirements, type ChallengeRow } from './challenges.service'
import { capReasons, lockPayee } from './caps'
import { paymentEndpoints, writePaymentEvents, type PaymentEndpoint } from './events'
import { recordChanges } from '../changes/record'
import { paymentChanges } from '../changes/sources'
import { networkInfo } from './networks'
import { declinedError, declineReasons, lockPayer, recordDecline, type DeclineReason } from './policy.service'
import { SETTLE_JOB_DELAY_SECONDS, SETTLE_KIND, SETTLE_MAX_ATTEMPTS } from './settle.job'
import { holdSettlementLock, PERMANENT, prepareSettlement, releaseSettlementLock, settleClaimed, settleNow, settlementError, type SettleOutcome, type SettlementRow } from './settle.service'
import { recoverSigner, verifyPayment, type VerifyOptions } from './verify'
import { pipelinedTransaction } from '../db/transaction'
import { isUniqueViolation } from '../db/errors'

/** the unique key of x402_settlements on (chain_id, asset, payer, nonce): one claim per authorization */
const AUTHORIZATION_KEY = 'x402_settlements_chain_id_asset_payer_nonce_key'

export interface PayRequest {
  challengeId: string
  /** the paying organization (its spend policy applies); null for a payer without an account here */
  payerOrg: string | null
  /** the x402 v1 payment payload */
  payment: unknown
  verify?: VerifyOptions
}

export interface Receipt {
  challenge_id: string
  status: 'settled'
  settle_tx: string
  network: ChallengeRow['network']
  amount: string
  asset: string
  pay_to: string
  payer: string
  settled_at: string
}

async function receiptOf(ctx: AppContext, c: ChallengeRow): Promise<Receipt> {
  const [s] = await ctx.sql<{ payer: string }[]>`select payer from x402_settlements where challenge_id = ${c.id}`
  return {
    challenge_id: c.id,
    status: 'settled',
    settle_tx: c.settle_tx!,
    network: c.network,
    amount: c.amount,
    asset: c.asset,
    pay_to: c.pay_to,
    payer: s ? s.payer : '',
    settled_at: (c.settled_at ?? c.updated_at).toISOString(),
  }
}

/** The error a failed challenge answers with, every time it is paid again. */
function failedError(c: ChallengeRow): ApiError {
  const reasons = c.failure_reasons ?? [c.failure_reason ?? 'settlement_failed']
  if (c.failure_category === 'cap') return capError(reasons)
  return settlementError(c.failure_reason ?? 'settlement_failed', false)
}

const capError = (reasons: string[]) =>
  new ApiError('settle_cap_exceeded', `payment: the payee's settle caps refuse this amount (${reasons.join(', ')})`, { reasons, failure_category: 'cap' })

export const expiredError = () =>
  new ApiError('challenge_expired', 'challenge: expired; ask the payee for a new one', { reasons: ['challenge_expired'], failure_category: 'settlement' })

/** Verifies, claims and settles a payment for a challenge; returns the receipt or throws the spec's failure. */
export async function payChallenge(ctx: AppContext, req: PayRequest): Promise<Receipt> {
  // With the payer of a claim already made on it (a settlement not yet completed binds the
  // challenge to that authorization). The payload's signer is recovered while it is read.
  const read = ctx.sql<(ChallengeRow & { claimed_payer: string | null })[]>`
    select c.*, c.amount::text as amount, s.payer as claimed_payer
      from x402_challenges c left join x402_settlements s on s.challenge_id = c.id where c.id = ${req.challengeId}`.execute()
  const signer = recoverSigner(req.payment)
  const [found] = await read
  if (!found) throw errors.notFound('challenge')
  const { claimed_payer: claimedPayer, ...challenge } = found
  if (challenge.status === 'settled') return receiptOf(ctx, challenge)
  if (challenge.status === 'failed') throw failedError(challenge)

  const verified = await verifyPayment(challenge, req.payment, { ...req.verify, claimedPayer, signer })
  if (!verified.ok) {
    throw new ApiError('payment_verification_failed', `payment: does not match the challenge (${verified.reasons.join(', ')})`, {
      reasons: verified.reasons,
      failure_category: 'verification',
    })
  }
  if (challenge.expires_at.getTime() <= Date.now()) throw expiredError()

  const auth = verified.authorization
  // The settlement this payment claims, unless the claim finds another outcome. The read-only
  // part of settling it (the authorization's state, the simulation) starts now and runs while
  // the claim commits; nothing is sent before the claim is durable.
  const settlement: SettlementRow = {
    id: randomUUIDv7(),
    challenge_id: challenge.id,
    payee_org: challenge.org_id,
    payer_org: req.payerOrg,
    network: challenge.network,
    chain_id: networkInfo(challenge.network).chainId,
    asset: challenge.asset.toLowerCase(),
    payer: auth.from.toLowerCase(),
    nonce: auth.nonce,
    amount: challenge.amount,
    payment: settlementPayment(challenge, req.payment, verified),
    status: 'pending',
    tx_hash: null,
    failure_reason: null,
    attempts: 1,
    updated_at: new Date(),
  }
  const prepared = prepareSettlement(ctx, settlement)
  // One connection for the claim and, when this request claims, the settlement: the claim's
  // transaction takes the settlement's lock for the session, so the chain step follows its COMMIT
  // with no round trip between (settle.service.ts).
  const conn = await ctx.sql.reserve()
  let claim: Claim
  try {
    claim = await claimSettlement(ctx, conn, req, challenge, settlement)
    if (claim.kind === 'claimed') claim = { kind: 'settled', outcome: await settleClaimed(ctx, conn, { settlement, endpoints: claim.endpoints, jobId: claim.jobId, prepared }) }
  } finally {
    conn.release()
  }

  if (claim.kind === 'done') {
    if (claim.challenge.status === 'settled') return receiptOf(ctx, claim.challenge)
    throw failedError(claim.challenge)
  }
  if (claim.kind === 'declined') {
    await recordDecline(ctx.sql, req.payerOrg!, challenge, claim.reasons)
    throw declinedError(claim.reasons)
  }
  if (claim.kind === 'cap') throw capError(claim.reasons)
  const outcome = claim.kind === 'settled' ? claim.outcome : await settleNow(ctx, claim.id, { replacement: claim.replacement })
  if (outcome.status === 'settled') {
    return {
      challenge_id: challenge.id,
      status: 'settled',
      settle_tx: outcome.tx,
      network: challenge.network,
      amount: challenge.amount,
      asset: challenge.asset,
      pay_to: challenge.pay_to,
      payer: outcome.payer,
      settled_at: outcome.settledAt.toISOString(),
    }
  }
  if (outcome.status === 'failed') throw settlementError(outcome.reason, !PERMANENT.has(outcome.reason as never))
  throw settlementError(outcome.reason, true)
}

type Claim =
  | { kind: 'done'; challenge: ChallengeRow }
  | { kind: 'declined'; reasons: DeclineReason[] }
  | { kind: 'cap'; reasons: string[] }
  /** a claim of this authorization exists already: settle it (its settler may hold it) with the newest payload */
  | { kind: 'existing'; id: string; replacement: SettlementRow['payment'] }
  /** claimed by this request, which holds the settlement's lock */
  | { kind: 'claimed'; jobId: string; endpoints: PaymentEndpoint[] }
  | { kind: 'settled'; outcome: SettleOutcome }

/**
 * The claim, in one pipelined transaction on `conn`: the payee's and payer's locks, the challenge's
 * state, the spend policy and the settle caps, then the claim with its ledger rows, its job, its
 * change and the settlement's lock, which a claim that does not commit releases.
 */
function claimSettlement(ctx: AppContext, conn: ReservedSql, req: PayRequest, challenge: ChallengeRow, settlement: SettlementRow): Promise<Claim> {
  const amount = BigInt(challenge.amount)
  const auth = settlement.payment.authorization
  return pipelinedTransaction(conn, async (tx, commit): Promise<Claim> => {
    // The locks, then everything the decision reads, pipelined on the transaction's connection: the
    // statements run in order, so each read sees what committed before the locks were granted.
    // The policy and cap reads are wasted on the rare paths that do not need them.
    const [, , [c], [existing], declined, caps, endpoints] = await Promise.all([
      lockPayee(tx, challenge.org_id),
      req.payerOrg ? lockPayer(tx, req.payerOrg) : null,
      tx<Pick<ChallengeRow, 'status' | 'settle_tx' | 'settled_at' | 'updated_at' | 'failure_reason' | 'failure_category' | 'failure_reasons'>[]>`
        select status, settle_tx, settled_at, updated_at, failure_reason, failure_category, failure_reasons from x402_challenges where id = ${challenge.id} for update`,
      tx<Pick<SettlementRow, 'id' | 'payer' | 'nonce'>[]>`select id, payer, nonce from x402_settlements where challenge_id = ${challenge.id}`,
      req.payerOrg ? declineReasons(tx, req.payerOrg, challenge) : ([] as DeclineReason[]),
      capReasons(tx, challenge.org_id, amount),
      paymentEndpoints(tx, req.payerOrg ? [challenge.org_id, req.payerOrg] : [challenge.org_id]),
    ])
    if (c!.status !== 'pending') return { kind: 'done', challenge: { ...challenge, ...c! } }
    if (existing) {
      // A retry of the same authorization (the same nonce can move funds once): settle it with the newest payload.
      if (existing.payer !== settlement.payer || existing.nonce !== settlement.nonce) {
        throw errors.conflict('challenge: another payment for it is being settled', { reason: 'settlement_in_progress' })
      }
      return { kind: 'existing', id: existing.id, replacement: settlement.payment }
    }
    if (declined.length) return { kind: 'declined', reasons: declined }
    const facts = {
      challengeId: challenge.id, network: challenge.network, amount: challenge.amount, asset: challenge.asset,
      payeeOrg: challenge.org_id, payerOrg: req.payerOrg, payer: auth.from!, payTo: challenge.pay_to,
    }
    if (caps.length) {
      await commit(
        tx`
          update x402_challenges set status = 'failed', failure_reason = ${caps[0]!}, failure_category = 'cap', failure_reasons = ${caps}, updated_at = now()
           where id = ${challenge.id}`.execute(),
        writePaymentEvents(tx, ctx, { type: 'payment.failed', ...facts, failure: { reason: caps[0]!, category: 'cap', reasons: caps } }, endpoints),
      )
      return { kind: 'cap', reasons: caps }
    }
    // The claim, its ledger rows, its job, the settlement's lock and the change, sent with the
    // COMMIT (the claim first, the change last: see changes/record.ts). A claim that loses to
    // another challenge's (chain, asset, from, nonce) fails on the unique key, and the COMMIT rolls
    // it all back. The first attempt is counted with it: this request makes it at once.
    const s = settlement
    const inserted = tx`
        with claim as (
          insert into x402_settlements (id, challenge_id, payee_org, payer_org, network, chain_id, asset, payer, nonce, amount, payment, attempts)
          values (${s.id}, ${s.challenge_id}, ${s.payee_org}, ${s.payer_org}, ${s.network}, ${s.chain_id}, ${s.asset},
                  ${s.payer}, ${s.nonce}, ${s.amount}, ${tx.json(s.payment as never)}, ${s.attempts})
          returning id),
        received as (
          insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
          select ${randomUUIDv7()}, ${challenge.org_id}, claim.id, ${challenge.id}, 'received', 'pending', ${challenge.amount}, ${challenge.asset}, ${challenge.network}, ${auth.from!} from claim),
        sent as (
          insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
          select ${randomUUIDv7()}, ${req.payerOrg}::uuid, claim.id, ${challenge.id}, 'sent', 'pending', ${challenge.amount}, ${challenge.asset}, ${challenge.network}, ${challenge.pay_to}
            from claim where ${req.payerOrg}::uuid is not null)
        select id from claim`.execute()
    try {
      const [, jobId] = await commit(
        inserted,
        enqueue(tx, SETTLE_KIND, { settlement_id: s.id }, { runAt: new Date(Date.now() + SETTLE_JOB_DELAY_SECONDS * 1000), maxAttempts: SETTLE_MAX_ATTEMPTS }),
        holdSettlementLock(tx, s.id),
        recordChanges(tx, paymentChanges({ type: 'payment.paid', ...facts })),
      )
      return { kind: 'claimed', jobId: jobId!, endpoints }
    } catch (error) {
      // the lock outlives the transaction (the COMMIT, or ROLLBACK, is on the wire ahead of this)
      await releaseSettlementLock(tx, s.id).catch(() => {})
      if (isUniqueViolation(await inserted.then(() => null, e => e), AUTHORIZATION_KEY)) {
        throw errors.conflict('payment: this authorization was already presented for another challenge', { reason: 'authorization_already_claimed' })
      }
      throw error
    }
  })
}

/** What the settler needs later (possibly in another process): the verified authorization and the x402 shapes for an HTTP facilitator. */
export function settlementPayment(c: ChallengeRow, payment: unknown, v: Extract<Awaited<ReturnType<typeof verifyPayment>>, { ok: true }>) {
  const a = v.authorization
  return {
    paymentPayload: payment,
    paymentRequirements: paymentRequirements(c),
    authorization: { from: a.from, to: a.to, value: a.value.toString(), validAfter: a.validAfter.toString(), validBefore: a.validBefore.toString(), nonce: a.nonce },
    signature: v.signature,
  }
}
