/**
 * Email-native x402, the payee's side: POST /v1/x402/email-challenges creates a challenge with its
 * interaction (the payer address and domain pinned) and sends it as a real DKIM-signed message
 * through the ordinary send path (sender ownership, limits, signing, relay); the interaction's
 * reads. Messages the service sends later in the thread (receipt, reject) go the same way.
 */
import { planOf } from '../../account/org-queries'
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../../context'
import type { Sql, Tx } from '../../db/client'
import type { Auth } from '../../auth/principal'
import { ApiError, errors } from '../../errors'
import { idempotent, releaseKey } from '../../http/idempotency'
import { deleteJobsFor, enqueue } from '../../jobs/queue'
import { splitAddress } from '../../mail/inbound/recipients'
import { sendMail } from '../../sending/service'
import { sendsWithMessageIds } from '../../sending/queries'
import { createChallenge, findChallenge, paymentRequirements, payUrl, presentChallenge, type ChallengeRow } from '../challenges.service'
import type { Network } from '../networks'
import { buildStep, STEP_FILENAME, type Step } from './steps'

export const EXPIRE_KIND = 'x402.email.expire'

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

export interface NewEmailChallenge {
  from: string
  to: string
  amount: string
  network: Network
  expires_in?: number
  description?: string
  resource?: string
}

/** The challenge step: the requirements, the nonce binding and the EIP-3009 nonce to sign. */
export function challengeStep(c: ChallengeRow): Step {
  const step = buildStep(
    c.interaction_id,
    'challenge',
    null,
    {
      challenge_id: c.id,
      payment_requirements: paymentRequirements(c),
      challenge_nonce: c.challenge_nonce,
      authorization_nonce: c.authorization_nonce,
    },
    c.expires_at,
  )
  return { ...step, step_id: c.challenge_step_id }
}

const base64 = (value: unknown) => Buffer.from(JSON.stringify(value, null, 2)).toString('base64')

/** The credentials the service acts with for the payee organization when it answers in a thread. */
async function payeeAuth(sql: Sql, orgId: string): Promise<Auth> {
  return { orgId, keyId: 'x402-email', userId: null, role: 'owner', method: 'api_key', plan: (await planOf(sql, orgId))!, apiPerMinute: 0 }
}

/** Records a step we send, in the caller's transaction or on its own. */
export async function recordSentStep(sql: Sql | Tx, interactionId: string, step: Step) {
  await sql`
    insert into x402_interaction_steps (id, interaction_id, step, step_id, direction, accepted, body)
    values (${randomUUIDv7()}, ${interactionId}, ${step.step}, ${step.step_id}, 'sent', true, ${sql.json(step as never)})`
}

/**
 * Sends a step in the interaction's thread, to the pinned payer address only (never to an
 * unauthenticated From). Its send is idempotent on (interaction, purpose), so a retried job
 * never sends it twice.
 */
export async function sendStep(ctx: AppContext, i: InteractionRow, step: Step, purpose: string, text: string, inReplyToEmailId: string | null) {
  const auth = await payeeAuth(ctx.sql, i.org_id)
  const subject = step.step === 'receipt' ? 'Payment received' : step.step === 'reject' ? 'Payment not accepted' : 'Payment'
  await sendMail(
    ctx,
    auth,
    {
      from: i.payee_address,
      to: i.payer_address,
      subject: `${subject} (${i.id})`,
      body_text: text,
      attachments: [{ filename: STEP_FILENAME, content_type: 'application/json', content: base64(step) }],
      ...(inReplyToEmailId && { in_reply_to_email_id: inReplyToEmailId }),
      headers: { 'Auto-Submitted': 'auto-replied' },
    },
    `x402-email:${i.id}:${purpose}`,
  )
  await recordSentStep(ctx.sql, i.id, step)
}

function challengeText(c: ChallengeRow, payee: string, payLink: string) {
  const units = BigInt(c.amount)
  const usdc = `${units / 1_000_000n}.${(units % 1_000_000n).toString().padStart(6, '0')}`
  return [
    `${payee} asks for a payment of ${usdc} USDC (${c.amount} base units) on ${c.network}.`,
    c.description ? `For: ${c.description}` : '',
    `Pay to: ${c.pay_to}`,
    `Expires: ${c.expires_at.toISOString()}`,
    '',
    'To pay, sign an EIP-3009 TransferWithAuthorization with the nonce `authorization_nonce` of the attached',
    'interaction.json, and reply to this message from this address with a `payment` step attached as interaction.json.',
    'To refuse, reply with a `decline` step. Interaction: ' + c.interaction_id,
    '',
    `Or pay with any x402 client, no account needed: ${payLink}`,
  ]
    .filter((line, n) => line || n > 2)
    .join('\n')
}

/** POST /v1/x402/email-challenges. */
export async function createEmailChallenge(ctx: AppContext, auth: Auth, body: NewEmailChallenge, key: string | undefined) {
  const from = body.from.toLowerCase()
  const to = body.to.toLowerCase()
  const payeeDomain = splitAddress(from).domain
  const scope = `org:${auth.orgId}:x402.email-challenges`
  const outcome = await idempotent(ctx.sql, ctx.keys, { scope, key, payload: body }, async tx => {
    const description = body.description ?? (body.resource ? `payment for ${body.resource}` : '')
    const c = await createChallenge(tx, auth.orgId, { amount: body.amount, network: body.network, description, expires_in: body.expires_in }, payeeDomain)
    await tx`
      insert into x402_interactions (id, org_id, challenge_id, payee_address, payer_address, payer_domain)
      values (${c.interaction_id}, ${auth.orgId}, ${c.id}, ${from}, ${to}, ${splitAddress(to).domain})`
    await enqueue(tx, EXPIRE_KIND, { interaction_id: c.interaction_id }, { runAt: c.expires_at, maxAttempts: 10 })
    return { status: 201, data: { interaction_id: c.interaction_id, challenge_id: c.id } }
  })
  const { interaction_id: interactionId, challenge_id: challengeId } = outcome.data
  const c = (await findChallenge(ctx.sql, challengeId))!
  const [i] = await ctx.sql<InteractionRow[]>`select * from x402_interactions where id = ${interactionId}`
  if (!i!.send_id) {
    const step = challengeStep(c)
    try {
      const sent = await sendMail(
        ctx,
        auth,
        {
          from: body.from,
          to: body.to,
          subject: `Payment request: ${c.description || c.amount + ' base units of USDC'}`.slice(0, 998).replace(/[\r\n]/g, ' '),
          body_text: challengeText(c, body.from, payUrl(ctx.config.PUBLIC_URL, c.id)),
          attachments: [{ filename: STEP_FILENAME, content_type: 'application/json', content: base64(step) }],
        },
        `x402-email:${interactionId}:challenge`,
      )
      await ctx.sql.begin(async tx => {
        // a replay racing the original may get here too, with the same send (it is idempotent): the step is recorded once
        const [claimed] = await tx`
          update x402_interactions set send_id = ${sent.data.id}, thread_id = ${sent.data.thread_id ?? null}, updated_at = now()
           where id = ${interactionId} and send_id is null returning id`
        if (claimed) await recordSentStep(tx, interactionId, step)
      })
      i!.send_id = sent.data.id
    } catch (error) {
      // The request that created it (or another retry) is sending it right now: this one lost the race.
      if (error instanceof ApiError && error.code === 'conflict') {
        throw errors.conflict('Idempotency-Key: a request with this key is still in progress; retry shortly', { reason: 'idempotency_request_in_progress' })
      }
      // Nothing went out: nothing of this request stays (a retry with the key creates it anew).
      await ctx.sql.begin(async tx => {
        await deleteJobsFor(tx, EXPIRE_KIND, 'interaction_id', interactionId)
        await tx`delete from x402_challenges where id = ${challengeId}`
        if (key) await releaseKey(tx, scope, key)
      })
      throw error
    }
  }
  return {
    key,
    replayed: outcome.replayed,
    data: { interaction_id: interactionId, challenge_id: challengeId, challenge: presentChallenge(c, ctx.config.PUBLIC_URL), send_id: i!.send_id },
  }
}

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

/** Ends an interaction past its expiry that still awaits a payment; returns whether it did. */
export async function expireIfDue(sql: Sql | Tx, id: string): Promise<boolean> {
  const rows = await sql`
    update x402_interactions i set state = '$expired', outcome = 'expired', failure_reason = 'challenge_expired', updated_at = now()
      from x402_challenges c
     where i.id = ${id} and c.id = i.challenge_id and i.state = 'awaiting_payment' and c.expires_at <= now()
     returning i.id`
  return rows.length > 0
}

/** GET /v1/x402/interactions/{id}: the payee's interaction with its steps and settlement. */
export async function getInteraction(ctx: AppContext, orgId: string, id: string) {
  let i = await findInteraction(ctx.sql, id)
  if (!i || i.org_id !== orgId) throw errors.notFound('interaction')
  if (await expireIfDue(ctx.sql, id)) i = (await findInteraction(ctx.sql, id))!
  const c = (await findChallenge(ctx.sql, i.challenge_id))!
  const steps = await ctx.sql<
    {
      step: string
      step_id: string | null
      direction: 'sent' | 'received'
      accepted: boolean
      reasons: string[]
      email_id: string | null
      body: unknown
      created_at: Date
    }[]
  >`
    select step, step_id, direction, accepted, reasons, email_id, body, created_at from x402_interaction_steps where interaction_id = ${id} order by created_at, id`
  return {
    interaction_id: i.id,
    state: i.state,
    outcome: i.outcome,
    challenge_id: i.challenge_id,
    payee_address: i.payee_address,
    payer_address: i.payer_address,
    payer_domain: i.payer_domain,
    payer_org: i.payer_org,
    expires_at: c.expires_at.toISOString(),
    settlement:
      c.status === 'settled' && c.settle_tx
        ? { settle_tx: c.settle_tx, status: 'settled' as const, network: c.network, amount: c.amount, asset: c.asset, pay_to: c.pay_to }
        : null,
    failure_reason: i.failure_reason,
    reasons: i.failure_reasons,
    thread_id: i.thread_id,
    steps: steps.map(s => ({ ...s, created_at: s.created_at.toISOString() })),
    created_at: i.created_at.toISOString(),
    updated_at: i.updated_at.toISOString(),
  }
}
