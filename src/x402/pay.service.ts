/**
 * Paying a challenge: the one path shared by `POST /v1/x402/challenges/{id}/pay`, the stock-client
 * path and (later) the email-native flow. Order: the challenge's state (settled returns the
 * original receipt, expired is refused), our own verification against the stored challenge,
 * the payer's spend policy, then the claim with the payee's settle caps, and settlement.
 */
import { randomUUIDv7 } from 'bun'
import type { ReservedSql } from 'postgres'
import { LRUCache } from 'lru-cache'
import { perProcess, type AppContext } from '../context'
import { enqueue } from '../jobs/queue'
import { ApiError, errors } from '../errors'
import { paymentRequirements } from './challenges.service'
import { challengeStateWithClaim, failChallengeOnCaps, findChallenge, lockChallenge, type ChallengeRow } from './challenge-queries'
import { capReasons } from './caps'
import { paymentEndpoints, writePaymentEvents, type PaymentEndpoint } from './events'
import { recordChanges } from '../changes/record'
import { paymentChanges } from '../changes/sources'
import { networkInfo } from './networks'
import { declinedError, declineReasons, type DeclineReason } from './policy.service'
import { insertDecline } from './policy-queries'
import { SETTLE_JOB_DELAY_SECONDS, SETTLE_KIND, SETTLE_MAX_ATTEMPTS } from './settle.job'
import { paymentFactsOf, PERMANENT, prepareSettlement, settleClaimed, settleNow, settlementError, type SettleOutcome } from './settle.service'
import { insertClaim, releaseSettlementLock, settlementPayer, type SettlementRow } from './settlement-queries'
import type { Prepared } from './facilitator'
import { recoverSigner, verifyPayment, type Verified, type VerifyOptions } from './verify'
import { pipelinedTransaction } from '../db/transaction'
import { isOverCaps } from './totals-queries'
import { settlementSql } from './settlement-connections'
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
  const s = await settlementPayer(ctx.sql, c.id)
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

/**
 * Challenges by id, as this process created or first read them. What a payment is verified and
 * claimed against (payee, amount, network, asset, nonce binding) never changes after creation,
 * so a pay of a known challenge sends its claim's first batch at once; its state and expiry are
 * read there, under the challenge's row lock (which also finds a challenge whose creation rolled
 * back missing). A challenge created here and paid through another process is read there once.
 */
const knownChallenges = perProcess(() => new LRUCache<string, ChallengeRow>({ max: 10_000 }))

/** Keeps a challenge just created, for its payment. */
export const rememberChallenge = (ctx: AppContext, c: ChallengeRow) => void knownChallenges(ctx).set(c.id, c)

async function challengeToPay(ctx: AppContext, id: string): Promise<ChallengeRow | null> {
  const known = knownChallenges(ctx).get(id)
  if (known) return known
  const row = await findChallenge(ctx.sql, id)
  if (row) rememberChallenge(ctx, row)
  return row
}

/** Verifies, claims and settles a payment for a challenge; returns the receipt or throws the spec's failure. */
export async function payChallenge(ctx: AppContext, req: PayRequest): Promise<Receipt> {
  const challenge = await challengeToPay(ctx, req.challengeId)
  if (!challenge) throw errors.notFound('challenge')
  // A read just made may already say how this ends; a known challenge's state is read with the claim.
  if (challenge.status === 'settled') return receiptOf(ctx, challenge)
  // One connection for the claim and, when this request claims, the settlement: the claim's
  // transaction takes the settlement's lock for the session, so the chain step follows its COMMIT
  // with no round trip between (settle.service.ts). It is held across the chain step, so it comes
  // from the settlements' own pool (settlement-connections.ts).
  const conn = await settlementSql(ctx).reserve()
  let claim: Claim
  try {
    claim = await claimWithinCaps(ctx, conn, req, challenge)
    if (claim.kind === 'claimed') claim = { kind: 'settled', outcome: await settleClaimed(ctx, conn, claim) }
  } finally {
    conn.release()
  }

  if (claim.kind === 'done') {
    if (claim.challenge.status === 'settled') return receiptOf(ctx, claim.challenge)
    throw failedError(claim.challenge)
  }
  if (claim.kind === 'declined') {
    await insertDecline(ctx.sql, req.payerOrg!, challenge, claim.reasons)
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
  /** claimed by this request, which holds the settlement's lock; its read-only part of settling started with the claim */
  | { kind: 'claimed'; settlement: SettlementRow; jobId: string; endpoints: PaymentEndpoint[]; prepared: Promise<Prepared> }
  | { kind: 'settled'; outcome: SettleOutcome }

/** How many times a claim is decided before it gives up: each new decision follows another claim's commit. */
const MAX_DECISIONS = 5

/**
 * The claim, decided again (on the new totals) when a concurrent claim took the headroom of a cap
 * that its decision counted on: its statement then fails (totals-queries.ts), and it rolls back.
 */
async function claimWithinCaps(ctx: AppContext, conn: ReservedSql, req: PayRequest, challenge: ChallengeRow): Promise<Claim> {
  for (let decision = 1; ; decision++) {
    try {
      return await claimSettlement(ctx, conn, req, challenge)
    } catch (error) {
      if (!isOverCaps(error)) throw error
      if (decision === MAX_DECISIONS) throw errors.conflict("payment: concurrent payments keep taking the caps' headroom; retry", { reason: 'caps_contended' })
    }
  }
}

/**
 * The claim, in one pipelined transaction on `conn`, in two batches, with no lock held while it is
 * decided but the challenge's row. The first reads everything the decision needs (the challenge's
 * state and a claim already made on it, under the challenge's row lock; the spend policy and the
 * payer's day; the settle caps and the payee's day and month; the endpoints that take payment
 * events); the payload's signer is recovered while it runs, and the payment verified when it is
 * back. The second writes the claim with its ledger rows, its totals (each checked against its cap
 * as it is added: a concurrent claim may have added to it since it was read), its job, its change
 * and the settlement's lock (released at once by a claim that does not commit), and COMMITs; the
 * read-only part of settling starts with it (prepareSettlement), so the chain is read while the
 * claim commits, and nothing is sent before the claim is durable.
 */
function claimSettlement(ctx: AppContext, conn: ReservedSql, req: PayRequest, challenge: ChallengeRow): Promise<Claim> {
  return pipelinedTransaction(conn, async (tx, commit): Promise<Claim> => {
    // The challenge's row lock first, in a statement of its own: the reads after it take their
    // snapshot once it is granted, so they see what a concurrent pay of this challenge committed
    // (a locking read sees the locked row's new version, but its join the old snapshot). The
    // policy and cap reads are wasted on the rare paths that do not need them.
    const reads = Promise.all([
      lockChallenge(tx, challenge.id),
      challengeStateWithClaim(tx, challenge.id),
      req.payerOrg ? declineReasons(tx, req.payerOrg, challenge) : { dailyCap: null, reasons: [] as DeclineReason[] },
      capReasons(tx, challenge.org_id, BigInt(challenge.amount)),
      paymentEndpoints(tx, req.payerOrg ? [challenge.org_id, req.payerOrg] : [challenge.org_id]),
    ])
    const signer = recoverSigner(req.payment)
    const [, [found], policy, payee, endpoints] = await reads
    if (!found) throw errors.notFound('challenge')
    const { claim_id, claim_payer, claim_nonce, ...state } = found
    const existing = claim_id ? { id: claim_id, payer: claim_payer!, nonce: claim_nonce! } : null
    const current = { ...challenge, ...state }
    if (current.status !== 'pending') return { kind: 'done', challenge: current }

    // a settlement not yet completed binds the challenge to its payer's authorization
    const verified = await verifyPayment(current, req.payment, { ...req.verify, claimedPayer: existing?.payer, signer })
    if (!verified.ok) {
      throw new ApiError('payment_verification_failed', `payment: does not match the challenge (${verified.reasons.join(', ')})`, {
        reasons: verified.reasons,
        failure_category: 'verification',
      })
    }
    if (current.expires_at.getTime() <= Date.now()) throw expiredError()
    // the settlement this payment claims, unless a claim already exists or a refusal follows
    const s = settlementOf(challenge, req.payerOrg, req.payment, verified)
    if (existing) {
      // A retry of the same authorization (the same nonce can move funds once): settle it with the newest payload.
      if (existing.payer !== s.payer || existing.nonce !== s.nonce) {
        throw errors.conflict('challenge: another payment for it is being settled', { reason: 'settlement_in_progress' })
      }
      return { kind: 'existing', id: existing.id, replacement: s.payment }
    }
    if (policy.reasons.length) return { kind: 'declined', reasons: policy.reasons }
    const facts = paymentFactsOf(s)
    const overCaps = payee.reasons
    if (overCaps.length) {
      await commit(
        failChallengeOnCaps(tx, challenge.id, overCaps),
        writePaymentEvents(tx, ctx, { type: 'payment.failed', ...facts, failure: { reason: overCaps[0]!, category: 'cap', reasons: overCaps } }, endpoints),
      )
      return { kind: 'cap', reasons: overCaps }
    }

    // The claim with its ledger rows, its totals and the settlement's lock, its job and the
    // change, sent with the COMMIT (the claim first, the change last: see changes/record.ts). A
    // claim that loses to another challenge's (chain, asset, from, nonce) fails on the unique key,
    // and the COMMIT rolls it all back.
    const inserted = insertClaim(
      tx,
      s,
      { asset: challenge.asset, payer: facts.payer, payTo: challenge.pay_to },
      { received: { day: payee.caps.daily, month: payee.caps.monthly }, sent: { day: policy.dailyCap } },
    )
    try {
      const committed = commit(
        inserted,
        enqueue(tx, SETTLE_KIND, { settlement_id: s.id }, { runAt: new Date(Date.now() + SETTLE_JOB_DELAY_SECONDS * 1000), maxAttempts: SETTLE_MAX_ATTEMPTS }),
        recordChanges(tx, paymentChanges({ type: 'payment.paid', ...facts })),
      )
      // The read-only part of settling starts a macrotask later, once the claim's statements are
      // on the wire (postgres.js writes them at the next one): its CPU then runs while the
      // database runs them, instead of holding them back with the locks taken.
      const prepared = new Promise(resolve => setImmediate(resolve)).then(() => prepareSettlement(ctx, s))
      const [, jobId] = await committed
      return { kind: 'claimed', settlement: s, jobId: jobId!, endpoints, prepared }
    } catch (error) {
      // the lock, if the claim was written, outlives the transaction (the COMMIT, or ROLLBACK, is on the wire ahead of this)
      await releaseSettlementLock(tx, s.id).catch(() => {})
      const failed = await inserted.then(
        () => null,
        e => e,
      )
      if (isUniqueViolation(failed, AUTHORIZATION_KEY)) {
        throw errors.conflict('payment: this authorization was already presented for another challenge', { reason: 'authorization_already_claimed' })
      }
      // a total past its cap (isOverCaps) is the claim's own statement's failure
      throw failed ?? error
    }
  })
}

/**
 * The settlement a verified payment claims, with what the settler needs later (possibly in
 * another process): the verified authorization and the x402 shapes for an HTTP facilitator. Its
 * first attempt is counted with the claim (the claiming request makes it at once).
 */
function settlementOf(challenge: ChallengeRow, payerOrg: string | null, paymentPayload: unknown, verified: Extract<Verified, { ok: true }>): SettlementRow {
  const a = verified.authorization
  return {
    id: randomUUIDv7(),
    challenge_id: challenge.id,
    payee_org: challenge.org_id,
    payer_org: payerOrg,
    network: challenge.network,
    chain_id: networkInfo(challenge.network).chainId,
    asset: challenge.asset.toLowerCase(),
    payer: a.from.toLowerCase(),
    nonce: a.nonce,
    amount: challenge.amount,
    payment: {
      paymentPayload,
      paymentRequirements: paymentRequirements(challenge),
      authorization: {
        from: a.from,
        to: a.to,
        value: a.value.toString(),
        validAfter: a.validAfter.toString(),
        validBefore: a.validBefore.toString(),
        nonce: a.nonce,
      },
      signature: verified.signature,
    },
    status: 'pending',
    tx_hash: null,
    failure_reason: null,
    attempts: 1,
    updated_at: new Date(),
  }
}
