/**
 * The `send.execute` job: one execution of a send. It builds the message (MIME, DKIM), stores
 * it as an outbound email, hands it to the relay and records the answer; for a repeat it then
 * schedules the next tick. A crash after the message was built but before the relay answered
 * re-runs the relay with the message already stored, so nothing is built twice.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { enqueue } from '../jobs/queue'
import type { Job } from '../jobs/queue'
import { log } from '../log'
import { parseMail } from '../mail/inbound/parse'
import { NO_VERDICTS } from '../mail/inbound/authenticate'
import { splitAddress } from '../mail/inbound/recipients'
import { storeEmail } from '../mail/store'
import { buildMime, type OutboundMessage } from '../mail/outbound/build'
import { dkimSign, signingKeyFor } from '../mail/outbound/dkim'
import { RelayError } from '../mail/outbound/relay'
import { relayOf } from './relay'
import type { SendMailRequest } from './model'
import { tickPart } from './repeat'

export const EXECUTE_KIND = 'send.execute'

export interface SendRow {
  id: string
  org_id: string
  status: string
  request: NormalizedRequest
  from_address: string
  scheduled_at: Date | null
  repeat_every_minutes: number | null
  repeat_next_at: Date | null
  repeat_stopped_at: Date | null
  repeat_stopped_by: string | null
  ticks: number
  thread_id: string | null
  last_email_id: string | null
  last_message_id: string | null
  accepted: string[]
  rejected: string[]
  relay_response: string | null
  error_code: string | null
  error_message: string | null
  created_at: Date
  updated_at: Date
}

/** The request as executed: recipients as arrays, reply context resolved. */
export type NormalizedRequest = Omit<SendMailRequest, 'to' | 'reply_to'> & {
  to: string[]
  reply_to?: string[]
  reply?: { in_reply_to?: string; references: string[] }
}

const envelopeRecipients = (r: NormalizedRequest) => [...r.to, ...(r.cc ?? []), ...(r.bcc ?? [])]

function message(send: SendRow): OutboundMessage {
  const r = send.request
  const domain = splitAddress(r.from).domain
  const previous = send.last_message_id
  const references = [...(r.reply?.references ?? []), ...(previous ? [previous] : [])]
  return {
    from: { address: r.from, name: r.from_name },
    to: r.to,
    cc: r.cc ?? [],
    bcc: r.bcc ?? [],
    replyTo: r.reply_to,
    subject: send.ticks > 0 && !/^re:/i.test(r.subject) ? `Re: ${r.subject}` : r.subject,
    text: r.body_text,
    html: r.body_html,
    attachments: r.attachments?.map(a => ({ filename: a.filename, content_type: a.content_type, content_base64: a.content })),
    headers: r.headers,
    messageId: `<${randomUUIDv7()}@${domain}>`,
    // a repeat tick answers the previous tick, so every tick stays in one thread
    inReplyTo: previous ?? r.reply?.in_reply_to,
    references: references.length ? references : undefined,
    date: new Date(),
    jsonPart: send.repeat_every_minutes ? tickPart(send, domain) : undefined,
  }
}

/** Builds, signs and stores the next message of the send; marks the send as executing it. */
async function build(ctx: AppContext, send: SendRow): Promise<{ emailId: string; raw: Uint8Array }> {
  const m = message(send)
  const key = await signingKeyFor(ctx, send.org_id, splitAddress(send.request.from).domain)
  const mime = buildMime(m)
  const raw = new TextEncoder().encode(key ? await dkimSign(mime, key) : mime)
  const mail = await parseMail(raw)
  return ctx.sql.begin(async tx => {
    const email = await storeEmail(tx, {
      orgId: send.org_id,
      direction: 'outbound',
      eventType: 'email.received',
      mail,
      raw,
      mailFrom: send.request.from,
      rcptTo: envelopeRecipients(send.request),
      auth: NO_VERDICTS,
      threadId: send.thread_id ?? undefined,
    })
    await tx`
      update sends set status = case when status = 'sending' then 'sending' else 'executing' end,
             last_email_id = ${email.id}, last_message_id = ${m.messageId}, thread_id = ${email.threadId},
             ticks = ticks + 1, updated_at = now()
       where id = ${send.id}`
    return { emailId: email.id, raw }
  })
}

async function storedRaw(ctx: AppContext, emailId: string): Promise<Uint8Array> {
  const [row] = await ctx.sql<{ raw: Buffer }[]>`select raw from email_contents where email_id = ${emailId}`
  return new Uint8Array(row!.raw)
}

/** Has the current execution been built but not handed to the relay yet (a crash in between)? */
const builtNotRelayed = (send: SendRow) => (send.status === 'executing' || send.status === 'sending') && send.last_email_id !== null && send.relay_response === null && send.error_code === null

/**
 * Ticks keep a fixed cadence from the first send (a late tick does not shift the next ones);
 * after a long outage the next tick is one interval from now rather than a burst of catch-ups.
 */
function nextTick(send: SendRow): Date {
  const every = send.repeat_every_minutes! * 60_000
  const next = (send.repeat_next_at ?? new Date()).getTime() + every
  return new Date(next > Date.now() ? next : Date.now() + every)
}

export async function executeSend(ctx: AppContext, sendId: string): Promise<void> {
  const [send] = await ctx.sql<SendRow[]>`select * from sends where id = ${sendId}`
  if (!send || send.status === 'canceled' || send.status === 'failed') return
  const isTick = send.ticks > 0 && !builtNotRelayed(send)
  if (isTick && (!send.repeat_every_minutes || send.repeat_stopped_at)) return
  const { emailId, raw } = builtNotRelayed(send) ? { emailId: send.last_email_id!, raw: await storedRaw(ctx, send.last_email_id!) } : await build(ctx, send)
  const immediate = send.status === 'sending'
  const repeating = send.repeat_every_minutes !== null && !send.repeat_stopped_at
  const next = repeating ? nextTick(send) : null
  try {
    const result = await relayOf(ctx).send({ from: send.request.from, to: envelopeRecipients(send.request), orgId: send.org_id }, new TextDecoder().decode(raw))
    await ctx.sql.begin(async tx => {
      await tx`
        update sends set status = ${immediate ? 'queued' : 'executed'}, accepted = ${result.accepted}, rejected = ${result.rejected},
               relay_response = ${result.response}, error_code = null, error_message = null, updated_at = now(),
               repeat_next_at = ${next}
         where id = ${send.id}`
      if (next) await enqueue(tx, EXECUTE_KIND, { send_id: send.id }, { runAt: next })
    })
    log.info('send relayed', { send_id: send.id, email_id: emailId, accepted: result.accepted.length, rejected: result.rejected.length })
  } catch (error) {
    if (!(error instanceof RelayError)) throw error
    // The relay's verdict is final for this execution; the client decides whether to retry.
    await ctx.sql`
      update sends set status = 'failed', error_code = ${error.code}, error_message = ${error.message},
             relay_response = ${error.maybeSent ? 'unknown: the message may have been accepted' : null}, updated_at = now()
       where id = ${send.id}`
    log.warn('send failed', { send_id: send.id, code: error.code, maybe_sent: error.maybeSent })
  }
}

export const executeJob = {
  kind: EXECUTE_KIND,
  handle: (ctx: AppContext, payload: { send_id: string }, _job: Job) => executeSend(ctx, payload.send_id),
}
