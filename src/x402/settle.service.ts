/**
 * Settlement of a claimed payment, at most once. The claim (an `x402_settlements` row, unique
 * on (chain, asset, from, nonce) and on the challenge) is written with its `x402.settle` job in
 * one transaction; the request that claimed it settles it at once, and the job is there for a
 * process that died on the way. Whoever settles holds the settlement's lock (an advisory lock on
 * its id) for the whole attempt, so a concurrent caller waits and then reads the outcome. The
 * claimer takes it for its session in the claim's own transaction (`holdSettlementLock`, in
 * settlement-queries.ts) and goes from the claim's COMMIT to the chain with no round trip between
 * (`settleClaimed`); every other settler takes it for its transaction (`settleNow`).
 *
 * Before sending, the token's `authorizationState` is read: a used authorization is resolved
 * from the chain (its `AuthorizationUsed` log and that transaction's Transfer), so a crash between
 * sending and recording neither loses the transaction nor repeats it, and a front-run transfer
 * of exactly this payment still settles the challenge.
 */
import type { AppContext } from '../context'
import type postgres from 'postgres'
import type { Tx } from '../db/client'
import { errors, type ApiError } from '../errors'
import { log } from '../log'
import { findAuthorizationUse, isAuthorizationUsed, publicClient } from './chain'
import { facilitatorFor, type Prepared, type SettlementFailure } from './facilitator'
import { paymentEndpoints, writePaymentEvents, type PaymentEndpoint } from './events'
import { pipelinedTransaction, type Commit } from '../db/transaction'
import type { Authorization } from './token'
import { takeFailureFromTotals } from './totals-queries'
import { countAttempt, lockSettlement, recordedOutcome, releaseSettlementLock, settlementOrgs, writeOutcome, type SettlementRow } from './settlement-queries'
import { settlementSql } from './settlement-connections'

export const PERMANENT: ReadonlySet<SettlementFailure> = new Set(['insufficient_funds', 'authorization_already_used'])
/** seconds a client is told to wait before retrying a transient settlement failure */
export const RETRY_AFTER_SECONDS = 5

export type SettleOutcome =
  | { status: 'settled'; tx: string; settledAt: Date; payer: string }
  | { status: 'failed'; reason: SettlementFailure | string }
  | { status: 'retry'; reason: SettlementFailure; message: string }

const authorizationOf = (s: SettlementRow): Authorization => ({
  from: s.payment.authorization.from as `0x${string}`,
  to: s.payment.authorization.to as `0x${string}`,
  value: BigInt(s.payment.authorization.value!),
  validAfter: BigInt(s.payment.authorization.validAfter!),
  validBefore: BigInt(s.payment.authorization.validBefore!),
  nonce: s.payment.authorization.nonce as `0x${string}`,
})

/**
 * Settles the claimed settlement now, or reads the outcome another caller recorded. Never throws
 * for a chain failure. The transaction is pipelined: its BEGIN goes with the lock and the read of
 * the endpoints that take payment events, its COMMIT with the record of the outcome.
 */
export async function settleNow(
  ctx: AppContext,
  settlementId: string,
  opts: {
    lastAttempt?: boolean /** a newer signature of the same authorization (same from and nonce), to send instead */
    replacement?: SettlementRow['payment']
  } = {},
): Promise<SettleOutcome> {
  // the transaction lasts the attempt, chain step included: a connection of the settlements' pool
  return pipelinedTransaction(settlementSql(ctx), async (tx, commit) => {
    // The lock, then one statement that counts the attempt and swaps in a newer signature; it
    // finds the row no longer pending when a settler before this one recorded the outcome. The
    // endpoints are read under the lock, before the outcome is known: an endpoint created during
    // the attempt misses its event, as it would had it been created a moment later.
    const [, [s], endpoints] = await Promise.all([
      lockSettlement(tx, settlementId),
      countAttempt(tx, settlementId, opts.replacement),
      paymentEndpoints(tx, settlementOrgs(tx, settlementId)),
    ])
    if (!s) {
      const done = await recordedOutcome(tx, settlementId)
      if (done?.status === 'settled') return { status: 'settled', tx: done.tx_hash!, settledAt: done.settled_at!, payer: done.payer }
      return { status: 'failed', reason: done?.failure_reason ?? 'settlement_failed' }
    }
    return record(tx, commit, ctx, s, await attempt(ctx, s), endpoints, { lastAttempt: opts.lastAttempt })
  })
}

/**
 * Settles a settlement this request has just claimed, on the claim's connection and under the
 * lock the claim took (`holdSettlementLock`): the attempt (its read-only part perhaps done while
 * the claim committed: `prepareSettlement`), then its record, which deletes the settle job, no
 * longer needed, and releases the lock ahead of its COMMIT: a settler that was waiting for the
 * lock then waits for the record's row lock, and finds the outcome. The lock is released
 * whatever happens.
 */
export async function settleClaimed(
  ctx: AppContext,
  conn: postgres.ReservedSql,
  claimed: { settlement: SettlementRow; endpoints: PaymentEndpoint[]; jobId: string; prepared: Promise<Prepared> },
): Promise<SettleOutcome> {
  const s = claimed.settlement
  let released = false
  try {
    const outcome = await attempt(ctx, s, claimed.prepared)
    return await pipelinedTransaction(conn, (tx, commit) =>
      record(tx, commit, ctx, s, outcome, claimed.endpoints, {
        jobId: claimed.jobId,
        release: () => releaseSettlementLock(tx, s.id).then(() => (released = true)),
      }),
    )
  } finally {
    if (!released) await releaseSettlementLock(conn, s.id).catch(() => {})
  }
}

/**
 * Records an attempt's outcome and commits; `lastAttempt` turns a retry into a failure. An outcome
 * that ends the settlement also deletes its job (`jobId`: the claimer's, which is no longer needed).
 * `release` sends the release of a session lock, after the settlement's row is written (a settler
 * waiting for the lock then waits for that row) and before the events.
 */
async function record(
  tx: Tx,
  commit: Commit,
  ctx: AppContext,
  s: SettlementRow,
  outcome: AttemptOutcome,
  endpoints: PaymentEndpoint[],
  opts: { lastAttempt?: boolean; jobId?: string; release?: () => Promise<unknown> },
): Promise<SettleOutcome> {
  if (outcome.status === 'retry' && !opts.lastAttempt) {
    // the attempt is counted (and a newer signature kept) even when it is to be retried
    await commit(opts.release?.())
    log.warn('x402 settlement not completed', { settlement_id: s.id, reason: outcome.reason, message: outcome.message })
    return outcome
  }
  const settled = outcome.status === 'settled' ? outcome.tx : null
  const reason = outcome.status === 'settled' ? null : outcome.reason
  const [, [c]] = await commit(
    // a failed settlement no longer counts towards caps
    settled ? null : Promise.all(takeFailureFromTotals(tx, s)),
    writeOutcome(tx, s, { settled, reason, jobId: opts.jobId }),
    opts.release?.(),
    writePaymentEvents(
      tx,
      ctx,
      settled
        ? { type: 'payment.settled', ...paymentFactsOf(s), settleTx: settled }
        : { type: 'payment.failed', ...paymentFactsOf(s), failure: { reason: reason!, category: 'settlement', reasons: [reason!] } },
      endpoints,
    ),
  )
  return settled ? { status: 'settled', tx: settled, settledAt: c!.settled_at!, payer: s.payer } : { status: 'failed', reason: reason! }
}

type AttemptOutcome =
  | { status: 'settled'; tx: string }
  | { status: 'failed'; reason: SettlementFailure }
  | { status: 'retry'; reason: SettlementFailure; message: string }

/** The read-only part of settling `s` (see `Facilitator.prepare`), which may start before its claim is durable. Never rejects. */
export function prepareSettlement(ctx: AppContext, s: SettlementRow): Promise<Prepared> {
  const client = publicClient(ctx, s.network)
  if (!client) return Promise.resolve({ ok: false, reason: 'settlement_misconfigured', message: `no JSON-RPC endpoint is configured for ${s.network}` })
  const auth = authorizationOf(s)
  return facilitatorFor(ctx, s.network, client).prepare({
    network: s.network,
    authorization: auth,
    signature: s.payment.signature,
    authorizationUsed: () => isAuthorizationUsed(client, s.network, auth.from, auth.nonce),
    paymentPayload: s.payment.paymentPayload,
    paymentRequirements: s.payment.paymentRequirements,
  })
}

async function attempt(ctx: AppContext, s: SettlementRow, prepared = prepareSettlement(ctx, s)): Promise<AttemptOutcome> {
  const ready = await prepared
  const result = ready.ok ? await ready.send() : ready
  if (result.ok) return { status: 'settled', tx: result.tx }
  // Used already (our own send before a crash, or a front-run) or between the read and the send: the chain says by whom.
  if (result.reason === 'authorization_already_used') {
    try {
      const use = await findAuthorizationUse(publicClient(ctx, s.network)!, s.network, authorizationOf(s))
      return use?.exactTransfer ? { status: 'settled', tx: use.tx } : { status: 'failed', reason: 'authorization_already_used' }
    } catch (error) {
      return { status: 'retry', reason: 'facilitator_unavailable', message: `reading the used authorization: ${(error as Error).message}`.slice(0, 300) }
    }
  }
  if (PERMANENT.has(result.reason)) return { status: 'failed', reason: result.reason }
  return { status: 'retry', reason: result.reason, message: result.message }
}

/** What a payment's events and changes say of it (changes/sources.ts `PaymentFacts`), from its settlement. */
export function paymentFactsOf(s: SettlementRow) {
  return {
    challengeId: s.challenge_id,
    network: s.network,
    amount: s.amount,
    asset: s.payment.paymentRequirements.asset as string,
    payeeOrg: s.payee_org,
    payerOrg: s.payer_org,
    payer: s.payment.authorization.from!,
    payTo: s.payment.authorization.to!,
  }
}

const MESSAGES: Record<string, string> = {
  insufficient_funds: 'the payer does not hold enough USDC for this payment',
  facilitator_unavailable: 'the facilitator or chain endpoint is unavailable; retry shortly',
  settlement_misconfigured: 'settlement is not configured correctly on this service (operator fault)',
  settlement_failed: 'the settlement did not complete; retry shortly',
  authorization_already_used: 'the authorization was already used on chain by another transfer',
}

/** The `settlement_failed` error of a failed or not yet completed settlement (transient ones carry Retry-After). */
export function settlementError(reason: string, transient: boolean): ApiError {
  const retry = transient && reason !== 'settlement_misconfigured' ? RETRY_AFTER_SECONDS : undefined
  return errors.settlementFailed(`payment: ${MESSAGES[reason] ?? reason}`, { reasons: [reason], failure_category: 'settlement' }, retry)
}
