/**
 * Paying a challenge: the one path shared by `POST /v1/x402/challenges/{id}/pay`, the stock-client
 * path and (later) the email-native flow. Order: the challenge's state (settled returns the
 * original receipt, expired is refused), our own verification against the stored challenge,
 * the payer's spend policy, then the claim with the payee's settle caps, and settlement.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { enqueue } from '../jobs/queue'
import { ApiError, errors } from '../http/errors'
import { paymentRequirements, type ChallengeRow } from './challenges.service'
import { capReasons, lockPayee } from './caps'
import { enqueuePaymentEvents } from './events'
import { recordChanges } from '../changes/record'
import { paymentChanges } from '../changes/sources'
import { networkInfo } from './networks'
import { declinedError, declineReasons, lockPayer, recordDecline, type DeclineReason } from './policy.service'
import { SETTLE_JOB_DELAY_SECONDS, SETTLE_KIND, SETTLE_MAX_ATTEMPTS } from './settle.job'
import { PERMANENT, settleNow, settlementError, type SettlementRow } from './settle.service'
import { verifyPayment, type VerifyOptions } from './verify'
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
  // with the payer of a claim already made on it (a settlement not yet completed binds the challenge to that authorization)
  const [found] = await ctx.sql<(ChallengeRow & { claimed_payer: string | null })[]>`
    select c.*, c.amount::text as amount, s.payer as claimed_payer
      from x402_challenges c left join x402_settlements s on s.challenge_id = c.id where c.id = ${req.challengeId}`
  if (!found) throw errors.notFound('challenge')
  const { claimed_payer: claimedPayer, ...challenge } = found
  if (challenge.status === 'settled') return receiptOf(ctx, challenge)
  if (challenge.status === 'failed') throw failedError(challenge)

  const verified = await verifyPayment(challenge, req.payment, { ...req.verify, claimedPayer })
  if (!verified.ok) {
    throw new ApiError('payment_verification_failed', `payment: does not match the challenge (${verified.reasons.join(', ')})`, {
      reasons: verified.reasons,
      failure_category: 'verification',
    })
  }
  if (challenge.expires_at.getTime() <= Date.now()) throw expiredError()

  const auth = verified.authorization
  const amount = BigInt(challenge.amount)
  // A pipelined transaction: BEGIN goes with the locks and the reads, COMMIT with the writes.
  const claim = await pipelinedTransaction(ctx.sql, async (tx, commit) => {
    // The locks, then everything the decision reads, pipelined on the transaction's connection: the
    // statements run in order, so each read sees what committed before the locks were granted.
    // The policy and cap reads are wasted on the rare paths that do not need them.
    const [, , [c], [existing], declined, caps] = await Promise.all([
      lockPayee(tx, challenge.org_id),
      req.payerOrg ? lockPayer(tx, req.payerOrg) : null,
      tx<Pick<ChallengeRow, 'status' | 'settle_tx' | 'settled_at' | 'updated_at' | 'failure_reason' | 'failure_category' | 'failure_reasons'>[]>`
        select status, settle_tx, settled_at, updated_at, failure_reason, failure_category, failure_reasons from x402_challenges where id = ${challenge.id} for update`,
      tx<Pick<SettlementRow, 'id' | 'payer' | 'nonce'>[]>`select id, payer, nonce from x402_settlements where challenge_id = ${challenge.id}`,
      req.payerOrg ? declineReasons(tx, req.payerOrg, challenge) : ([] as DeclineReason[]),
      capReasons(tx, challenge.org_id, amount),
    ])
    if (c!.status !== 'pending') return { kind: 'done' as const, challenge: { ...challenge, ...c! } }
    if (existing) {
      // A retry of the same authorization (the same nonce can move funds once): settle it with the newest payload.
      if (existing.payer !== auth.from.toLowerCase() || existing.nonce !== auth.nonce) {
        throw errors.conflict('challenge: another payment for it is being settled', { reason: 'settlement_in_progress' })
      }
      // Its row may be locked by a settlement in flight (which also updates this challenge): settleNow swaps the payload under that lock.
      return { kind: 'settle' as const, id: existing.id, replacement: settlementPayment(challenge, req.payment, verified) }
    }
    if (declined.length) return { kind: 'declined' as const, reasons: declined }
    if (caps.length) {
      await Promise.all([
        tx`
          update x402_challenges set status = 'failed', failure_reason = ${caps[0]!}, failure_category = 'cap', failure_reasons = ${caps}, updated_at = now()
           where id = ${challenge.id}`,
        enqueuePaymentEvents(tx, ctx, {
          type: 'payment.failed',
          challengeId: challenge.id,
          network: challenge.network,
          amount: challenge.amount,
          asset: challenge.asset,
          payeeOrg: challenge.org_id,
          payerOrg: req.payerOrg,
          payer: auth.from,
          payTo: challenge.pay_to,
          failure: { reason: caps[0]!, category: 'cap', reasons: caps },
        }),
      ])
      await commit()
      return { kind: 'cap' as const, reasons: caps }
    }
    // The claim, its ledger rows, its job and its change, sent with the COMMIT (the claim first,
    // the change last: see changes/record.ts). A claim that loses to another challenge's
    // (chain, asset, from, nonce) fails on the unique key, and the COMMIT rolls it all back.
    const id = randomUUIDv7()
    const inserted = tx`
        with s as (
          insert into x402_settlements (id, challenge_id, payee_org, payer_org, network, chain_id, asset, payer, nonce, amount, payment)
          values (${id}, ${challenge.id}, ${challenge.org_id}, ${req.payerOrg}, ${challenge.network}, ${networkInfo(challenge.network).chainId}, ${challenge.asset.toLowerCase()},
                  ${auth.from.toLowerCase()}, ${auth.nonce}, ${challenge.amount}, ${tx.json(settlementPayment(challenge, req.payment, verified) as never)})
          returning id),
        received as (
          insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
          select ${randomUUIDv7()}, ${challenge.org_id}, s.id, ${challenge.id}, 'received', 'pending', ${challenge.amount}, ${challenge.asset}, ${challenge.network}, ${auth.from} from s),
        sent as (
          insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
          select ${randomUUIDv7()}, ${req.payerOrg}::uuid, s.id, ${challenge.id}, 'sent', 'pending', ${challenge.amount}, ${challenge.asset}, ${challenge.network}, ${challenge.pay_to}
            from s where ${req.payerOrg}::uuid is not null)
        select id from s`.execute()
    try {
      await commit(
        inserted,
        enqueue(tx, SETTLE_KIND, { settlement_id: id }, { runAt: new Date(Date.now() + SETTLE_JOB_DELAY_SECONDS * 1000), maxAttempts: SETTLE_MAX_ATTEMPTS }),
        recordChanges(tx, paymentChanges({
          type: 'payment.paid', challengeId: challenge.id, network: challenge.network, amount: challenge.amount, asset: challenge.asset,
          payeeOrg: challenge.org_id, payerOrg: req.payerOrg, payer: auth.from, payTo: challenge.pay_to,
        })),
      )
    } catch (error) {
      if (isUniqueViolation(await inserted.then(() => null, e => e), AUTHORIZATION_KEY)) {
        throw errors.conflict('payment: this authorization was already presented for another challenge', { reason: 'authorization_already_claimed' })
      }
      throw error
    }
    return { kind: 'settle' as const, id, replacement: undefined }
  })

  if (claim.kind === 'done') {
    if (claim.challenge.status === 'settled') return receiptOf(ctx, claim.challenge)
    throw failedError(claim.challenge)
  }
  if (claim.kind === 'declined') {
    await recordDecline(ctx.sql, req.payerOrg!, challenge, claim.reasons)
    throw declinedError(claim.reasons)
  }
  if (claim.kind === 'cap') throw capError(claim.reasons)

  const outcome = await settleNow(ctx, claim.id, { replacement: claim.replacement })
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
