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
import { findChallenge, paymentRequirements, type ChallengeRow } from './challenges.service'
import { capReasons, lockPayee } from './caps'
import { enqueuePaymentEvents } from './events'
import { recordChanges } from '../changes/record'
import { paymentChanges } from '../changes/sources'
import { networkInfo } from './networks'
import { declinedError, declineReasons, lockPayer, recordDecline } from './policy.service'
import { SETTLE_JOB_DELAY_SECONDS, SETTLE_KIND, SETTLE_MAX_ATTEMPTS } from './settle.job'
import { PERMANENT, settleNow, settlementError, type SettlementRow } from './settle.service'
import { verifyPayment, type VerifyOptions } from './verify'

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
  const challenge = await findChallenge(ctx.sql, req.challengeId)
  if (!challenge) throw errors.notFound('challenge')
  if (challenge.status === 'settled') return receiptOf(ctx, challenge)
  if (challenge.status === 'failed') throw failedError(challenge)

  const verified = await verifyPayment(challenge, req.payment, req.verify)
  if (!verified.ok) {
    throw new ApiError('payment_verification_failed', `payment: does not match the challenge (${verified.reasons.join(', ')})`, {
      reasons: verified.reasons,
      failure_category: 'verification',
    })
  }
  if (challenge.expires_at.getTime() <= Date.now()) throw expiredError()

  const claim = await ctx.sql.begin(async tx => {
    await lockPayee(tx, challenge.org_id)
    if (req.payerOrg) await lockPayer(tx, req.payerOrg)
    const c = (await findChallenge(tx, challenge.id, { lock: true }))!
    if (c.status !== 'pending') return { kind: 'done' as const, challenge: c }
    const auth = verified.authorization
    const info = networkInfo(c.network)
    const [existing] = await tx<Pick<SettlementRow, 'id' | 'payer' | 'nonce' | 'status'>[]>`
      select id, payer, nonce, status from x402_settlements where challenge_id = ${c.id}`
    if (existing) {
      // A retry of the same authorization (the same nonce can move funds once): settle it with the newest payload.
      if (existing.payer !== auth.from.toLowerCase() || existing.nonce !== auth.nonce) {
        throw errors.conflict('challenge: another payment for it is being settled', { reason: 'settlement_in_progress' })
      }
      // Its row may be locked by a settlement in flight (which also updates this challenge): settleNow swaps the payload under that lock.
      return { kind: 'settle' as const, id: existing.id, replacement: settlementPayment(c, req.payment, verified) }
    }
    if (req.payerOrg) {
      const declined = await declineReasons(tx, req.payerOrg, c)
      if (declined.length) return { kind: 'declined' as const, reasons: declined, challenge: c }
    }
    const caps = await capReasons(tx, c.org_id, auth.value)
    if (caps.length) {
      await tx`
        update x402_challenges set status = 'failed', failure_reason = ${caps[0]!}, failure_category = 'cap', failure_reasons = ${caps}, updated_at = now()
         where id = ${c.id}`
      await enqueuePaymentEvents(tx, ctx, {
        type: 'payment.failed',
        challengeId: c.id,
        network: c.network,
        amount: c.amount,
        asset: c.asset,
        payeeOrg: c.org_id,
        payerOrg: req.payerOrg,
        payer: auth.from,
        payTo: c.pay_to,
        failure: { reason: caps[0]!, category: 'cap', reasons: caps },
      })
      return { kind: 'cap' as const, reasons: caps }
    }
    const id = randomUUIDv7()
    const [inserted] = await tx<{ id: string }[]>`
      insert into x402_settlements (id, challenge_id, payee_org, payer_org, network, chain_id, asset, payer, nonce, amount, payment)
      values (${id}, ${c.id}, ${c.org_id}, ${req.payerOrg}, ${c.network}, ${info.chainId}, ${c.asset.toLowerCase()}, ${auth.from.toLowerCase()},
              ${auth.nonce}, ${c.amount}, ${tx.json(settlementPayment(c, req.payment, verified) as never)})
      on conflict (chain_id, asset, payer, nonce) do nothing
      returning id`
    if (!inserted) throw errors.conflict('payment: this authorization was already presented for another challenge', { reason: 'authorization_already_claimed' })
    await tx`
      insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
      values (${randomUUIDv7()}, ${c.org_id}, ${id}, ${c.id}, 'received', 'pending', ${c.amount}, ${c.asset}, ${c.network}, ${auth.from})`
    if (req.payerOrg) {
      await tx`
        insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
        values (${randomUUIDv7()}, ${req.payerOrg}, ${id}, ${c.id}, 'sent', 'pending', ${c.amount}, ${c.asset}, ${c.network}, ${c.pay_to})`
    }
    await enqueue(tx, SETTLE_KIND, { settlement_id: id }, { runAt: new Date(Date.now() + SETTLE_JOB_DELAY_SECONDS * 1000), maxAttempts: SETTLE_MAX_ATTEMPTS })
    await recordChanges(tx, paymentChanges({ type: 'payment.paid', challengeId: c.id, network: c.network, amount: c.amount, asset: c.asset, payeeOrg: c.org_id, payerOrg: req.payerOrg, payer: auth.from, payTo: c.pay_to }))
    return { kind: 'settle' as const, id, replacement: undefined }
  })

  if (claim.kind === 'done') {
    if (claim.challenge.status === 'settled') return receiptOf(ctx, claim.challenge)
    throw failedError(claim.challenge)
  }
  if (claim.kind === 'declined') {
    await recordDecline(ctx.sql, req.payerOrg!, claim.challenge, claim.reasons)
    throw declinedError(claim.reasons)
  }
  if (claim.kind === 'cap') throw capError(claim.reasons)

  const outcome = await settleNow(ctx, claim.id, { replacement: claim.replacement })
  if (outcome.status === 'settled') return receiptOf(ctx, (await findChallenge(ctx.sql, challenge.id))!)
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
