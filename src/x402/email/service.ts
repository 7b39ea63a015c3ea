/**
 * Email-native x402, the payee's side: POST /v1/x402/email-challenges creates a challenge with its
 * interaction (the payer address and domain pinned) and sends it as a real DKIM-signed message
 * through the ordinary send path (sender ownership, limits, signing, relay); the interaction's
 * reads. Messages the service sends later in the thread (receipt, reject) go the same way.
 */
import { planOf } from '../../account/org-queries'
import type { AppContext } from '../../context'
import type { Sql } from '../../db/client'
import type { Auth } from '../../auth/principal'
import { ApiError, errors } from '../../errors'
import { idempotent } from '../../http/idempotency'
import { releaseKey } from '../../http/idempotency-queries'
import { deleteJobsFor, enqueue } from '../../jobs/queue'
import { splitAddress } from '../../mail/inbound/recipients'
import { sendMail } from '../../sending/service'
import { createChallenge, paymentRequirements, payUrl, presentChallenge } from '../challenges.service'
import { deleteChallenge, findChallenge, type ChallengeRow } from '../challenge-queries'
import type { Network } from '../networks'
import { buildStep, STEP_FILENAME, type Step } from './steps'
import {
  claimChallengeSend,
  expireIfDue,
  findInteraction,
  insertInteraction,
  insertSentStep,
  interactionSteps,
  type InteractionRow,
} from './interaction-queries'

export const EXPIRE_KIND = 'x402.email.expire'

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
  await insertSentStep(ctx.sql, i.id, step)
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
    await insertInteraction(tx, {
      id: c.interaction_id,
      org_id: auth.orgId,
      challenge_id: c.id,
      payee_address: from,
      payer_address: to,
      payer_domain: splitAddress(to).domain,
    })
    await enqueue(tx, EXPIRE_KIND, { interaction_id: c.interaction_id }, { runAt: c.expires_at, maxAttempts: 10 })
    return { status: 201, data: { interaction_id: c.interaction_id, challenge_id: c.id } }
  })
  const { interaction_id: interactionId, challenge_id: challengeId } = outcome.data
  const c = (await findChallenge(ctx.sql, challengeId))!
  const i = await findInteraction(ctx.sql, interactionId)
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
        if (await claimChallengeSend(tx, interactionId, sent.data.id, sent.data.thread_id ?? null)) await insertSentStep(tx, interactionId, step)
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
        await deleteChallenge(tx, challengeId)
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

/** GET /v1/x402/interactions/{id}: the payee's interaction with its steps and settlement. */
export async function getInteraction(ctx: AppContext, orgId: string, id: string) {
  let i = await findInteraction(ctx.sql, id)
  if (!i || i.org_id !== orgId) throw errors.notFound('interaction')
  if (await expireIfDue(ctx.sql, id)) i = (await findInteraction(ctx.sql, id))!
  const c = (await findChallenge(ctx.sql, i.challenge_id))!
  const steps = await interactionSteps(ctx.sql, id)
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
