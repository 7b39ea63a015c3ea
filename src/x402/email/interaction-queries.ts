/**
 * The x402_interactions and x402_interaction_steps tables: an email-native payment's interaction
 * (its state in the thread, the payer pinned) and the steps sent and received in it.
 */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../../db/client'
import type { Stored } from '../model'
import { sendsWithMessageIds } from '../../sending/queries'
import type { InteractionStep } from './model'
import type { Step } from './steps'

export interface InteractionRow {
  id: string
  org_id: string
  challenge_id: string
  payee_address: string
  payer_address: string
  payer_domain: string
  state: 'awaiting_payment' | 'verifying' | '$completed' | '$failed' | '$expired'
  outcome: 'settled' | 'declined' | 'rejected' | 'expired' | null
  failure_reason: string | null
  failure_reasons: string[] | null
  payer_org: string | null
  verifying_email_id: string | null
  send_id: string | null
  thread_id: string | null
  trust_notice_sent: boolean
  created_at: Date
  updated_at: Date
}

export type StepRow = Stored<typeof InteractionStep, 'created_at'>

/** A new interaction, awaiting payment of its challenge (`id` is the challenge's interaction id). */
export async function insertInteraction(
  tx: Tx,
  i: Pick<InteractionRow, 'id' | 'org_id' | 'challenge_id' | 'payee_address' | 'payer_address' | 'payer_domain'>,
): Promise<void> {
  await tx`
      insert into x402_interactions (id, org_id, challenge_id, payee_address, payer_address, payer_domain)
      values (${i.id}, ${i.org_id}, ${i.challenge_id}, ${i.payee_address}, ${i.payer_address}, ${i.payer_domain})`
}

/** The interaction; `lock` takes it for update. */
export async function findInteraction(sql: Sql | Tx, id: string, opts: { lock?: boolean } = {}): Promise<InteractionRow | null> {
  const [row] = await sql<InteractionRow[]>`select * from x402_interactions where id = ${id} ${opts.lock ? sql`for update` : sql``}`
  return row ?? null
}

/**
 * The organization's interaction whose challenge message one of `messageIds` (a reply's
 * In-Reply-To and References) names: how a step that does not name its interaction in snake_case
 * (camelCase keys, say) is still answered in its thread. A rare path: it reads the organization's
 * interactions rather than an index of message ids.
 */
export async function findInteractionAnswered(sql: Sql | Tx, orgId: string, messageIds: string[]): Promise<InteractionRow | null> {
  if (!messageIds.length) return null
  const [row] = await sql<InteractionRow[]>`
    select i.* from x402_interactions i
     where i.org_id = ${orgId} and i.send_id in ${sendsWithMessageIds(sql, orgId, messageIds)}
     order by i.created_at desc limit 1`
  return row ?? null
}

/**
 * Records the challenge message's send on the interaction, unless a send is recorded already (a
 * replay racing the original gets here with the same send); returns whether it did.
 */
export async function claimChallengeSend(tx: Tx, id: string, sendId: string, threadId: string | null): Promise<boolean> {
  const [claimed] = await tx`
          update x402_interactions set send_id = ${sendId}, thread_id = ${threadId}, updated_at = now()
           where id = ${id} and send_id is null returning id`
  return Boolean(claimed)
}

/** Ends an interaction past its expiry that still awaits a payment; returns whether it did. */
export async function expireIfDue(sql: Sql | Tx, id: string): Promise<boolean> {
  const rows = await sql`
    update x402_interactions i set state = '$expired', outcome = 'expired', failure_reason = 'challenge_expired', updated_at = now()
      from x402_challenges c
     where i.id = ${id} and c.id = i.challenge_id and i.state = 'awaiting_payment' and c.expires_at <= now()
     returning i.id`
  return rows.length > 0
}

/** Claims the trust notice, sent at most once per interaction and only while it is open; returns whether this caller sends it. */
export async function claimTrustNotice(sql: Sql | Tx, id: string): Promise<boolean> {
  const [claimed] = await sql`
      update x402_interactions set trust_notice_sent = true, updated_at = now()
       where id = ${id} and not trust_notice_sent and state in ('awaiting_payment', 'verifying') returning id`
  return Boolean(claimed)
}

/** Ends an interaction awaiting payment as declined by the payer. */
export async function completeDeclined(tx: Tx, id: string): Promise<void> {
  await tx`update x402_interactions set state = '$completed', outcome = 'declined', updated_at = now() where id = ${id} and state = 'awaiting_payment'`
}

/** Makes `emailId` the one payment that verifies, while the interaction awaits payment and its challenge has not expired. */
export async function claimVerification(sql: Sql | Tx, id: string, emailId: string): Promise<InteractionRow | undefined> {
  const [claimed] = await sql<InteractionRow[]>`
      update x402_interactions i set state = 'verifying', verifying_email_id = ${emailId}, updated_at = now()
        from x402_challenges c
       where i.id = ${id} and c.id = i.challenge_id and i.state = 'awaiting_payment' and c.expires_at > now()
       returning i.*`
  return claimed
}

/** Ends the interaction as settled, paid by `payerOrg` (null: not an organization here). */
export async function completeSettled(tx: Tx, id: string, payerOrg: string | null): Promise<void> {
  await tx`update x402_interactions set state = '$completed', outcome = 'settled', payer_org = ${payerOrg}, updated_at = now() where id = ${id}`
}

/** Fails the interaction: its payment was rejected for `reasons`. */
export async function failRejected(tx: Tx, id: string, reasons: string[], payerOrg: string | null): Promise<void> {
  await tx`
        update x402_interactions set state = '$failed', outcome = 'rejected', failure_reason = ${reasons[0]!}, failure_reasons = ${reasons}, payer_org = ${payerOrg}, updated_at = now()
         where id = ${id}`
}

/** Records a step we send. */
export async function insertSentStep(sql: Sql | Tx, interactionId: string, step: Step): Promise<void> {
  await sql`
    insert into x402_interaction_steps (id, interaction_id, step, step_id, direction, accepted, body)
    values (${randomUUIDv7()}, ${interactionId}, ${step.step}, ${step.step_id}, 'sent', true, ${sql.json(step as never)})`
}

/** Records a step received in `emailId`, once per message. */
export async function insertReceivedStep(
  sql: Sql | Tx,
  interactionId: string,
  emailId: string,
  step: string,
  stepId: string | null,
  accepted: boolean,
  reasons: string[],
  body: unknown,
): Promise<void> {
  await sql`
    insert into x402_interaction_steps (id, interaction_id, step, step_id, direction, email_id, accepted, reasons, body)
    values (${randomUUIDv7()}, ${interactionId}, ${step}, ${stepId}, 'received', ${emailId}, ${accepted}, ${reasons}, ${sql.json((body ?? null) as never)})
    on conflict (email_id) do nothing`
}

/** Whether a step of the message `emailId` is recorded. */
export async function hasStepOf(sql: Sql | Tx, emailId: string): Promise<boolean> {
  const [seen] = await sql`select 1 from x402_interaction_steps where email_id = ${emailId}`
  return Boolean(seen)
}

/** The interaction's steps, in order. */
export function interactionSteps(sql: Sql | Tx, id: string): Promise<StepRow[]> {
  return sql<StepRow[]>`
    select step, step_id, direction, accepted, reasons, email_id, body, created_at from x402_interaction_steps where interaction_id = ${id} order by created_at, id`
}
