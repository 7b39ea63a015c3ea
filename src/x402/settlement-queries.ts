/**
 * The x402_settlements table, with the ledger rows and the challenge's outcome written alongside
 * it: a claim (the settlement, its ledger rows and its totals, in one statement), the
 * settlement's lock, an attempt and its outcome.
 */
import { randomUUIDv7 } from 'bun'
import type { Tx } from '../db/client'
import { deleteJobStatement } from '../jobs/queue'
import type { Network } from './networks'
import { addClaimToTotals, type TotalCaps } from './totals-queries'

export interface SettlementRow {
  id: string
  challenge_id: string
  payee_org: string
  payer_org: string | null
  network: Network
  chain_id: number
  asset: string
  payer: string
  nonce: string
  amount: string
  // biome-ignore lint/suspicious/noExplicitAny: x402 wire objects, checked by the facilitator
  payment: { paymentPayload: any; paymentRequirements: any; authorization: Record<string, string>; signature: `0x${string}` }
  status: 'pending' | 'settled' | 'failed'
  tx_hash: string | null
  failure_reason: string | null
  attempts: number
  updated_at: Date
}

/** The wallet that paid a settled challenge, if its settlement is found. */
export async function settlementPayer(sql: Tx, challengeId: string): Promise<{ payer: string } | undefined> {
  const [s] = await sql<{ payer: string }[]>`select payer from x402_settlements where challenge_id = ${challengeId}`
  return s
}

/** The settlement's lock: an advisory lock on its id, held by whoever attempts it. */
const lockKey = (tx: Tx, settlementId: string) => tx`hashtextextended(${`x402-settle:${settlementId}`}, 0)`

/**
 * Takes the lock of a settlement being claimed, for the session: an expression for the statement
 * that writes the claim, evaluated once its row is written. It outlives the COMMIT, so the claimer
 * holds it from the moment the claim is visible until its record (`settleClaimed`) releases it. A
 * new settlement's lock never waits.
 */
export const holdSettlementLock = (tx: Tx, settlementId: string) => tx`pg_advisory_lock(${lockKey(tx, settlementId)})`

/** Releases a lock taken with `holdSettlementLock` (harmless when it is not held). */
export const releaseSettlementLock = (tx: Tx, settlementId: string) => tx`select pg_advisory_unlock(${lockKey(tx, settlementId)})`.execute()

/** Takes the settlement's lock for the transaction. */
export const lockSettlement = (tx: Tx, settlementId: string) => tx`select pg_advisory_xact_lock(${lockKey(tx, settlementId)})`

/** What the payer's side of a claim writes to its ledger rows (as the challenge and the payment state them). */
export interface ClaimLedger {
  /** the challenge's asset, as stored */
  asset: string
  /** the wallet that signed, as it signed */
  payer: string
  payTo: string
}

/**
 * The claim, in one statement (sent at the call): the settlement, its received ledger row (and
 * its sent one, for a paying organization), its totals, each checked against its cap
 * (totals-queries.ts), and the settlement's lock for the session (`holdSettlementLock`). It
 * fails on the unique key of (chain, asset, payer, nonce) when another challenge claimed the
 * authorization, and on the caps' check when a total would pass its cap.
 */
export function insertClaim(tx: Tx, s: SettlementRow, ledger: ClaimLedger, caps: TotalCaps) {
  const totals = addClaimToTotals(tx, 'claim', s, caps)
  return tx`
        with claim as (
          insert into x402_settlements (id, challenge_id, payee_org, payer_org, network, chain_id, asset, payer, nonce, amount, payment, attempts)
          values (${s.id}, ${s.challenge_id}, ${s.payee_org}, ${s.payer_org}, ${s.network}, ${s.chain_id}, ${s.asset},
                  ${s.payer}, ${s.nonce}, ${s.amount}, ${tx.json(s.payment as never)}, ${s.attempts})
          returning id),
        received as (
          insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
          select ${randomUUIDv7()}, ${s.payee_org}, claim.id, ${s.challenge_id}, 'received', 'pending', ${s.amount}, ${ledger.asset}, ${s.network}, ${ledger.payer} from claim),
        sent as (
          insert into x402_ledger (id, org_id, settlement_id, challenge_id, direction, status, amount, asset, network, counterparty)
          select ${randomUUIDv7()}, ${s.payer_org}::uuid, claim.id, ${s.challenge_id}, 'sent', 'pending', ${s.amount}, ${ledger.asset}, ${s.network}, ${ledger.payTo}
            from claim where ${s.payer_org}::uuid is not null),
        ${totals.ctes}
        select id, ${holdSettlementLock(tx, s.id)} as locked, ${totals.withinCaps} as within_caps from claim`.execute()
}

/** Counts an attempt of a pending settlement, with a newer signature of its authorization to send instead; none when it is no longer pending. */
export const countAttempt = (tx: Tx, settlementId: string, replacement: SettlementRow['payment'] | undefined) =>
  tx<SettlementRow[]>`
        update x402_settlements set attempts = attempts + 1 ${replacement ? tx`, payment = ${tx.json(replacement as never)}` : tx``}
         where id = ${settlementId} and status = 'pending'
         returning *, amount::text as amount`

/** The settlement's payee and paying organizations, as a subquery. */
export const settlementOrgs = (tx: Tx, settlementId: string) =>
  tx`select payee_org from x402_settlements where id = ${settlementId} union select payer_org from x402_settlements where id = ${settlementId}`

/** Organizations listed, as a subquery like `settlementOrgs`. */
export const listedOrgs = (tx: Tx, orgIds: string[]) => tx`select unnest(${orgIds}::uuid[])`

/** The outcome another settler recorded. */
export async function recordedOutcome(tx: Tx, settlementId: string) {
  const [done] = await tx<{ status: string; tx_hash: string | null; failure_reason: string | null; payer: string; settled_at: Date | null }[]>`
        select s.status, s.tx_hash, s.failure_reason, s.payer, c.settled_at
          from x402_settlements s join x402_challenges c on c.id = s.challenge_id where s.id = ${settlementId}`
  return done
}

/**
 * The settlement's outcome on its rows, in one statement (sent at the call): the challenge, the
 * settlement, its ledger rows and (`jobId`) the deletion of its job. The events follow it in the
 * same transaction, their changes last (see changes/record.ts). A durable commit, though the
 * claim's job would redo a lost record from the chain: what this transaction writes is visible
 * before its WAL flush, so a record lost to a database crash would have shown changes-feed
 * numbers and webhook event ids that its redo gives to other writes.
 */
export function writeOutcome(tx: Tx, s: SettlementRow, o: { settled: string | null; reason: string | null; jobId?: string }) {
  const challenge = o.settled
    ? tx`status = 'settled', settle_tx = ${o.settled}, settled_at = now()`
    : tx`status = 'failed', failure_reason = ${o.reason}, failure_category = 'settlement', failure_reasons = ${[o.reason]}`
  const row = o.settled ? tx`status = 'settled', tx_hash = ${o.settled}` : tx`status = 'failed', failure_reason = ${o.reason}`
  const ledger = o.settled ? tx`status = 'settled', settle_tx = ${o.settled}` : tx`status = 'failed', failure_reason = ${o.reason}`
  return tx<{ settled_at: Date | null }[]>`
    with challenge as (update x402_challenges set ${challenge}, updated_at = now() where id = ${s.challenge_id} returning settled_at),
    settlement as (update x402_settlements set ${row}, updated_at = now() where id = ${s.id}),
    ledger as (update x402_ledger set ${ledger}, updated_at = now() where settlement_id = ${s.id})
    ${o.jobId ? tx`, job as (${deleteJobStatement(tx, o.jobId)})` : tx``}
    select settled_at from challenge`.execute()
}
