/**
 * Email-native x402, the inbound side. A stored inbound message with an `interaction.json` part
 * gets an `x402.email.step` job in the transaction that stores it; the job decides what the step
 * may do. Only a payer proven by DKIM (a passing signature covering From and Content-Type, by the
 * pinned payer domain or a true subdomain of it, on a message whose one From is the pinned payer
 * address) can pay or decline. Anything else is recorded, answered at most once per interaction
 * with a `reject` notice to the pinned address, and changes nothing: otherwise anyone who can send
 * mail could end a genuine payment. Verification, caps and settlement are the API's pay.
 */
import { findEmailWithRaw } from '../../mail/email-queries'
import type { AppContext } from '../../context'
import type { Sql, Tx } from '../../db/client'
import { ApiError } from '../../errors'
import type { JobKind } from '../../jobs/kind'
import type { AuthVerdicts } from '../../mail/inbound/authenticate'
import { attachmentContents } from '../../mail/inbound/parse'
import { resolveRecipient } from '../../mail/inbound/recipients'
import { planAccess } from '../../account/access'
import { findChallenge } from '../challenge-queries'
import { enqueuePaymentEvents } from '../events'
import { payChallenge } from '../pay.service'
import { enqueueInteractionEvent } from './events'
import { buildStep, parseStep, STEP_FILENAME, type Step } from './steps'
import { STEP_KIND } from './step-mail'
import { lastMessageIdOf } from '../../sending/queries'
import { EXPIRE_KIND, sendStep } from './service'
import {
  claimTrustNotice,
  claimVerification,
  completeDeclined,
  completeSettled,
  expireIfDue,
  failRejected,
  findInteraction,
  findInteractionAnswered,
  hasStepOf,
  insertReceivedStep,
  type InteractionRow,
} from './interaction-queries'

/** Equal to the pinned domain or a true subdomain of it (a sibling or a parent does not align). */
export const alignedDomain = (signing: string, pinned: string) => {
  const d = signing.toLowerCase().replace(/\.$/, '')
  const p = pinned.toLowerCase()
  return d === p || d.endsWith('.' + p)
}

type Header = { name: string; value: string }

/**
 * The `domain/selector` of each DKIM-Signature header with a body length tag (`l=`): such a
 * signature covers only the first bytes of the body, so anything may be appended after them
 * (another MIME part, another interaction.json) and it still passes. It never counts as covering.
 */
export function bodyLengthLimited(headers: Header[]): Set<string> {
  const limited = new Set<string>()
  for (const h of headers) {
    if (h.name.toLowerCase() !== 'dkim-signature') continue
    const tags = new Map(
      h.value
        .replace(/\s+/g, '')
        .split(';')
        .filter(Boolean)
        .map(tag => [tag.slice(0, tag.indexOf('=')).toLowerCase(), tag.slice(tag.indexOf('=') + 1)] as const),
    )
    if (tags.has('l')) limited.add(`${(tags.get('d') ?? '').toLowerCase()}/${(tags.get('s') ?? '').toLowerCase()}`)
  }
  return limited
}

/** Why a message may not act for the pinned payer; empty when it may. */
export function trustReasons(i: Pick<InteractionRow, 'payer_address' | 'payer_domain'>, from: string | null, headers: Header[], auth: AuthVerdicts): string[] {
  const reasons = new Set<string>()
  const fromHeaders = headers.filter(h => h.name.toLowerCase() === 'from').length
  if (fromHeaders !== 1 || (from ?? '').toLowerCase() !== i.payer_address) reasons.add('identity_mismatch')
  const limited = bodyLengthLimited(headers)
  const covering = auth.dkim.filter(
    d =>
      d.result === 'pass' &&
      d.signed_headers.includes('from') &&
      d.signed_headers.includes('content-type') &&
      !limited.has(`${d.domain.toLowerCase()}/${d.selector.toLowerCase()}`),
  )
  if (!covering.length) reasons.add('dkim_required')
  else if (!covering.some(d => alignedDomain(d.domain, i.payer_domain))) reasons.add('identity_mismatch')
  return [...reasons]
}

const rejectText = (reasons: string[]) =>
  `This message was not accepted as a payment: ${reasons.join(', ')}.\nThe attached interaction.json carries the reject step.`

export async function handleInboundStep(ctx: AppContext, emailId: string): Promise<void> {
  const e = await findEmailWithRaw(ctx.sql, { id: emailId }, ['id', 'org_id', 'direction', 'from_address', 'headers', 'in_reply_to', 'references', 'auth'])
  if (e?.direction !== 'inbound') return
  const part = (await attachmentContents(new Uint8Array(e.raw))).find(a => a.filename?.toLowerCase() === STEP_FILENAME)
  if (!part) return
  const parsed = parseStep(part.content)
  const interactionId = parsed.ok ? parsed.step.interaction_id : parsed.interaction_id
  // A step that does not name its interaction (camelCase keys, say) is still answered when the message replies in its thread.
  const threadIds = [e.in_reply_to, ...(e.references ?? [])].filter((id): id is string => Boolean(id))
  let i = interactionId ? await findInteraction(ctx.sql, interactionId) : await findInteractionAnswered(ctx.sql, e.org_id, threadIds)
  // Only the payee's own copy acts on its interaction; a step about anyone else's is ignored.
  if (!i || i.org_id !== e.org_id) return
  const resuming = i.verifying_email_id === e.id
  const seen = await hasStepOf(ctx.sql, e.id)
  if (seen && !resuming) return

  // The payee organization lost an entitlement since: the step is recorded and nothing is done.
  const access = await planAccess(ctx.sql, i.org_id)
  if (!access.entitlements.includes('x402_payments') || !access.entitlements.includes('interactions_enabled')) {
    await insertReceivedStep(
      ctx.sql,
      i.id,
      e.id,
      parsed.ok ? parsed.step.step : 'unparsed',
      parsed.ok ? parsed.step.step_id : null,
      false,
      ['feature_disabled'],
      parsed.ok ? parsed.step : null,
    )
    return
  }
  const trust = trustReasons(i, e.from_address, e.headers ?? [], e.auth)
  if (trust.length) {
    await insertReceivedStep(
      ctx.sql,
      i.id,
      e.id,
      parsed.ok ? parsed.step.step : 'unparsed',
      parsed.ok ? parsed.step.step_id : null,
      false,
      trust,
      parsed.ok ? parsed.step : null,
    )
    if (await claimTrustNotice(ctx.sql, i.id)) {
      const step = buildStep(i.id, 'reject', await challengeStepId(ctx.sql, i), { reason: trust[0], reasons: trust })
      await sendStep(ctx, i, step, 'trust-notice', rejectText(trust), null)
    }
    return
  }
  if (!parsed.ok) {
    await insertReceivedStep(ctx.sql, i.id, e.id, 'unparsed', null, false, [parsed.reason], { detail: parsed.detail })
    if (parsed.reason === 'unknown_step') return
    const step = buildStep(i.id, 'reject', await challengeStepId(ctx.sql, i), { reason: parsed.reason, reasons: [parsed.reason], detail: parsed.detail })
    await sendStep(ctx, i, step, `malformed:${e.id}`, rejectText([`${parsed.reason} (${parsed.detail})`]), e.id)
    return
  }
  const s = parsed.step
  // A payment or a decline answers the challenge message: In-Reply-To or References names it.
  const challengeMessageId = await lastMessageIdOf(ctx.sql, i.send_id)
  const threaded = Boolean(challengeMessageId) && [e.in_reply_to, ...(e.references ?? [])].includes(challengeMessageId!)
  if (!threaded && !resuming && (s.step === 'payment' || s.step === 'decline')) {
    await insertReceivedStep(ctx.sql, i.id, e.id, s.step, s.step_id, false, ['not_in_thread'], s)
    const step = buildStep(i.id, 'reject', await challengeStepId(ctx.sql, i), { reason: 'not_in_thread', reasons: ['not_in_thread'] })
    await sendStep(
      ctx,
      i,
      step,
      `unthreaded:${e.id}`,
      rejectText(['not_in_thread (reply to the challenge message, so that In-Reply-To or References names it)']),
      e.id,
    )
    return
  }
  const challengeStep = await challengeStepId(ctx.sql, i)
  if (s.prev_step_id !== challengeStep || (s.step !== 'payment' && s.step !== 'decline')) {
    await insertReceivedStep(ctx.sql, i.id, e.id, s.step, s.step_id, false, [s.prev_step_id !== challengeStep ? 'prev_step_mismatch' : 'unexpected_step'], s)
    return
  }
  if (s.step === 'decline') {
    await ctx.sql.begin(async tx => {
      await insertReceivedStep(tx, i!.id, e.id, s.step, s.step_id, true, [], s)
      await completeDeclined(tx, i!.id)
    })
    return
  }

  // A payment: one message verifies at a time; copies, duplicates and late ones change nothing.
  if (!resuming) {
    await insertReceivedStep(ctx.sql, i.id, e.id, s.step, s.step_id, true, [], s)
    const claimed = await claimVerification(ctx.sql, i.id, e.id)
    if (!claimed) {
      if (await expireIfDue(ctx.sql, i.id)) i = (await findInteraction(ctx.sql, i.id))!
      if (i.state === '$expired') {
        const step = buildStep(i.id, 'reject', challengeStep, { reason: 'challenge_expired', reasons: ['challenge_expired'] })
        await sendStep(ctx, i, step, 'expired', rejectText(['challenge_expired']), e.id)
      }
      return
    }
    i = claimed
  } else if (i.state !== 'verifying') {
    return finishSteps(ctx, i, e.id, challengeStep)
  }
  await settle(ctx, i, e.id, s, challengeStep)
}

async function challengeStepId(sql: Sql | Tx, i: InteractionRow) {
  return (await findChallenge(sql, i.challenge_id))!.challenge_step_id
}

/**
 * The organization hosting the pinned payer address, resolved as inbound mail to it is: a
 * managed inbox by its address (the managed domain is shared, so never by domain), any address
 * at a domain an organization has verified; null when it is not hosted here.
 */
export async function payerOrgOf(ctx: AppContext, address: string): Promise<string | null> {
  const hosted = await resolveRecipient(ctx, address)
  return 'orgId' in hosted ? hosted.orgId : null
}

async function settle(ctx: AppContext, i: InteractionRow, emailId: string, s: Step, challengeStep: string) {
  const payerOrg = await payerOrgOf(ctx, i.payer_address)
  const payment = (s.payload as { payment?: unknown }).payment
  try {
    const receipt = await payChallenge(ctx, { challengeId: i.challenge_id, payerOrg, payment })
    await ctx.sql.begin(async tx => {
      await completeSettled(tx, i.id, payerOrg)
      await enqueueInteractionEvent(tx, ctx, i.org_id, 'interaction.x402.settled', {
        interaction_id: i.id,
        challenge_id: i.challenge_id,
        payer_address: i.payer_address,
        payer_org: payerOrg,
        settle_tx: receipt.settle_tx,
        amount: receipt.amount,
        network: receipt.network,
      })
    })
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    const details = (error.details ?? {}) as { reasons?: string[]; failure_category?: string }
    // Transient: the job tries again (the settlement claim makes the retry settle at most once).
    if (error.code === 'settlement_failed' && error.headers['retry-after'] !== undefined) throw error
    const reasons = details.reasons ?? [error.code]
    const c = (await findChallenge(ctx.sql, i.challenge_id))!
    await ctx.sql.begin(async tx => {
      await failRejected(tx, i.id, reasons, payerOrg)
      // The pay path records payment.failed for caps and settlement; verification and policy refusals are the email flow's own.
      if (details.failure_category === 'verification' || details.failure_category === 'declined' || error.code === 'challenge_expired') {
        await enqueuePaymentEvents(tx, ctx, {
          type: 'payment.failed',
          challengeId: c.id,
          network: c.network,
          amount: c.amount,
          asset: c.asset,
          payeeOrg: c.org_id,
          payerOrg,
          payer: i.payer_address,
          payTo: c.pay_to,
          failure: { reason: reasons[0]!, category: details.failure_category ?? 'settlement', reasons },
        })
      }
      await enqueueInteractionEvent(tx, ctx, i.org_id, 'interaction.x402.rejected', {
        interaction_id: i.id,
        challenge_id: i.challenge_id,
        payer_address: i.payer_address,
        payer_org: payerOrg,
        reason: reasons[0],
        reasons,
        failure_category: details.failure_category ?? null,
      })
    })
  }
  await finishSteps(ctx, (await findInteraction(ctx.sql, i.id))!, emailId, challengeStep)
}

/** Sends the receipt or the reject of a finished verification (idempotent: a retried job sends it once). */
async function finishSteps(ctx: AppContext, i: InteractionRow, emailId: string, challengeStep: string) {
  const c = (await findChallenge(ctx.sql, i.challenge_id))!
  if (i.outcome === 'settled') {
    const step = buildStep(i.id, 'receipt', challengeStep, {
      settle_tx: c.settle_tx,
      status: 'settled',
      challenge_id: c.id,
      network: c.network,
      amount: c.amount,
    })
    await sendStep(ctx, i, step, 'final', `Payment received and settled on ${c.network}: ${c.settle_tx}`, emailId)
  } else if (i.outcome === 'rejected') {
    const reasons = i.failure_reasons ?? [i.failure_reason ?? 'rejected']
    const step = buildStep(i.id, 'reject', challengeStep, { reason: reasons[0], reasons })
    await sendStep(ctx, i, step, 'final', rejectText(reasons), emailId)
  }
}

export const inboundStepJob: JobKind<{ email_id: string }> = {
  kind: STEP_KIND,
  handle: (ctx, payload) => handleInboundStep(ctx, payload.email_id),
}

export const expireJob: JobKind<{ interaction_id: string }> = {
  kind: EXPIRE_KIND,
  async handle(ctx, payload) {
    await expireIfDue(ctx.sql, payload.interaction_id)
  },
}
