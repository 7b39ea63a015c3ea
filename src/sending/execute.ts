/**
 * The `send.execute` job: one execution of a send. It builds the message (MIME, DKIM), stores
 * it as an outbound email, hands it to the relay and records the answer; for a repeat it then
 * schedules the next tick. A crash after the message was built but before the relay answered
 * re-runs the relay with the message already stored, so nothing is built twice. (The first
 * message of an immediate send is built by the request, with the send: see service.ts.)
 */
import { storedRaw } from '../mail/email-queries'
import { mailEvents } from '../events'
import { randomUUIDv7 } from 'bun'
import { perProcess, type AppContext } from '../context'
import { GroupCommit } from '../db/group-commit'
import { pipelinedTransaction } from '../db/transaction'
import type { Tx } from '../db/client'
import type { JobKind } from '../jobs/kind'
import { deleteJobs, enqueue } from '../jobs/queue'
import { log } from '../log'
import { parseMail, type ParsedMail } from '../mail/inbound/parse'
import { NO_VERDICTS } from '../mail/inbound/authenticate'
import { splitAddress } from '../mail/inbound/recipients'
import { storeEmail, type StoredEmail } from '../mail/store'
import { recordChanges, type ChangeInput } from '../changes/record'
import { buildMime, type OutboundMessage } from '../mail/outbound/build'
import { dkimSign, signingKeyFor, type SigningKey } from '../mail/outbound/dkim'
import { RelayError } from '../mail/outbound/relay'
import { relayOf } from './relay'
import type { NormalizedRequest, SendRow } from './model'
import { tickPart } from './repeat'
import { recordRelayRefusals } from './relay-refusals'
import { suppressedOf } from './suppression-gate'
import { markBuilt, recordOutcomes, sendById, type OutcomeValues } from './sent-email-queries'

export const EXECUTE_KIND = 'send.execute'

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

/** The next message of a send, built and signed, not stored yet. */
export interface Composed {
  messageId: string
  /** as handed to the relay */
  text: string
  raw: Uint8Array
  mail: ParsedMail
}

/** A message of the send stored as an outbound email and not yet handed to the relay. */
export interface Built {
  emailId: string
  raw: Uint8Array
  text: string
}

export const sendingKeyFor = (ctx: AppContext, send: Pick<SendRow, 'org_id' | 'request'>) =>
  signingKeyFor(ctx, send.org_id, splitAddress(send.request.from).domain)

/** Builds the next message of the send and signs it with `key` (no database access). */
export async function compose(send: SendRow, key: SigningKey | null): Promise<Composed> {
  const m = message(send)
  const mime = buildMime(m)
  const text = key ? await dkimSign(mime, key) : mime
  const raw = new TextEncoder().encode(text)
  return { messageId: m.messageId, text, raw, mail: await parseMail(raw) }
}

/** Stores a composed message as the send's outbound email, in the caller's transaction. */
export function storeComposed(ctx: AppContext, tx: Tx, send: SendRow, c: Composed, emailId?: string): Promise<StoredEmail> {
  return storeEmail(ctx, tx, {
    id: emailId,
    orgId: send.org_id,
    direction: 'outbound',
    // every message of a send made with in_reply_to_email_id answers received mail, repeat ticks included
    eventType: send.request.reply ? 'email.replied' : 'email.sent',
    mail: c.mail,
    raw: c.raw,
    mailFrom: send.request.from,
    rcptTo: envelopeRecipients(send.request),
    auth: NO_VERDICTS,
    threadId: send.thread_id ?? undefined,
  })
}

/**
 * Builds, signs and stores the next message of the send; marks the send as executing it.
 * Returns the row as updated with the message.
 */
async function build(ctx: AppContext, send: SendRow): Promise<Built & { send: SendRow }> {
  const c = await compose(send, await sendingKeyFor(ctx, send))
  const built = await ctx.sql.begin(async tx => {
    const email = await storeComposed(ctx, tx, send, c)
    const updated = await markBuilt(tx, send.id, { emailId: email.id, messageId: c.messageId, threadId: email.threadId })
    await recordChanges(tx, [sentChange(send, email, c.mail.subject)])
    return { emailId: email.id, raw: c.raw, text: c.text, send: updated ?? send }
  })
  mailEvents(ctx).emitChange(send.org_id)
  return built
}

/** The feed's record of a message stored as sent, in the transaction that stores it. */
export function sentChange(send: Pick<SendRow, 'id' | 'org_id' | 'request'>, email: StoredEmail, subject: string): ChangeInput {
  return {
    orgId: send.org_id,
    type: 'email.sent',
    resource: { type: 'email', id: email.id },
    addresses: [send.request.from],
    data: { email_id: email.id, send_id: send.id, thread_id: email.threadId, from: send.request.from, to: email.rcptTo, subject },
  }
}

/** The message built before a crash, as stored. */
async function storedMessage(ctx: AppContext, emailId: string): Promise<Built> {
  const stored = await storedRaw(ctx.sql, emailId)
  if (!stored) throw new Error(`email ${emailId}: its stored content is gone`)
  const raw = new Uint8Array(stored)
  return { emailId, raw, text: new TextDecoder().decode(raw) }
}

/** Has the current execution been built but not handed to the relay yet (a crash in between)? */
const builtNotRelayed = (send: SendRow) =>
  (send.status === 'executing' || send.status === 'sending') && send.last_email_id !== null && send.relay_response === null && send.error_code === null

/**
 * Ticks keep a fixed cadence from the first send (a late tick does not shift the next ones);
 * after a long outage the next tick is one interval from now rather than a burst of catch-ups.
 */
function nextTick(send: SendRow): Date {
  const every = send.repeat_every_minutes! * 60_000
  const next = (send.repeat_next_at ?? new Date()).getTime() + every
  return new Date(next > Date.now() ? next : Date.now() + every)
}

/**
 * Executes the send once. `current` is its row when the caller has just written it (the request
 * that created it and claimed its job), with `built`, the message it stored with it, if any;
 * otherwise the row is read here. `jobId`: the job of this execution, deleted with its outcome.
 * Returns the send as this execution left it, or null when there was nothing to do.
 */
export async function executeSend(ctx: AppContext, sendId: string, current?: SendRow, built?: Built, jobId?: string): Promise<SendRow | null> {
  const send = current ?? (await sendById(ctx.sql, sendId))
  if (!send || send.status === 'canceled' || send.status === 'failed') return null
  const isTick = send.ticks > 0 && !builtNotRelayed(send)
  if (isTick && (!send.repeat_every_minutes || send.repeat_stopped_at)) return null
  const { send: now, ...out } = builtNotRelayed(send)
    ? { send, ...(built?.emailId === send.last_email_id ? built : await storedMessage(ctx, send.last_email_id!)) }
    : await build(ctx, send)
  // `now` is the row as the build left it: a repeat may have been stopped or changed meanwhile
  const immediate = now.status === 'sending'
  const repeating = now.repeat_every_minutes !== null && !now.repeat_stopped_at
  const next = repeating ? nextTick(now) : null
  // A scheduled send or a repeat's tick leaves out the addresses suppressed since it was created
  // (an immediate send's request checked them a moment ago); with none left it fails, and a
  // repeat stops.
  const envelope = envelopeRecipients(send.request)
  const suppressed = immediate ? new Set<string>() : new Set(await suppressedOf(ctx.sql, send.org_id, envelope))
  const to = envelope.filter(a => !suppressed.has(a.toLowerCase()))
  if (!to.length) {
    const final = await outcomes(ctx).submit({
      send: now,
      status: 'failed',
      accepted: null,
      rejected: null,
      relay_response: null,
      error_code: 'recipient_not_allowed',
      error_message: `every recipient is on the suppression list: ${[...suppressed].join(', ')}`,
      repeat_next_at: null,
      jobId,
    })
    mailEvents(ctx).emitChange(send.org_id)
    log.info('send skipped: every recipient suppressed', { send_id: send.id })
    return final ?? null
  }
  try {
    const result = await relayOf(ctx).send({ from: send.request.from, to, orgId: send.org_id }, out.text)
    // the next tick is enqueued with the outcome
    const final = await outcomes(ctx).submit({
      send: now,
      status: immediate ? 'queued' : 'executed',
      accepted: result.accepted,
      rejected: [...result.rejected, ...envelope.filter(a => suppressed.has(a.toLowerCase()))],
      relay_response: result.response,
      error_code: null,
      error_message: null,
      repeat_next_at: next,
      jobId,
    })
    mailEvents(ctx).emitChange(send.org_id)
    // a recipient the relay refused for good (5xx) is a hard bounce
    if (result.refusals?.length) await recordRelayRefusals(ctx, final ?? now, result.refusals)
    log.info('send relayed', { send_id: send.id, email_id: out.emailId, accepted: result.accepted.length, rejected: result.rejected.length })
    return final ?? null
  } catch (error) {
    if (!(error instanceof RelayError)) throw error
    // The relay's verdict is final for this execution; the client decides whether to retry.
    const final = await outcomes(ctx).submit({
      send: now,
      status: 'failed',
      accepted: null,
      rejected: null,
      relay_response: error.maybeSent ? 'unknown: the message may have been accepted' : null,
      error_code: error.code,
      error_message: error.message,
      repeat_next_at: null,
      jobId,
    })
    mailEvents(ctx).emitChange(send.org_id)
    if (error.refusals.length) await recordRelayRefusals(ctx, final ?? now, error.refusals)
    log.warn('send failed', { send_id: send.id, code: error.code, maybe_sent: error.maybeSent })
    return final ?? null
  }
}

/** What an execution's relay answer sets on its send, with the send as the execution left it. */
interface Outcome extends Omit<OutcomeValues, 'id'> {
  send: SendRow
  /** the job of this execution, deleted with its outcome (the caller then does not delete it) */
  jobId?: string
}

/**
 * The outcomes of the executions that finish while one is being written go together in the next
 * transaction (group commit): with many sends in flight, one commit for several instead of one
 * each. Each outcome commits with its send's state change in the feed, its next tick and the
 * deletion of its job, or not at all. Returns each send as updated (undefined if it is gone).
 */
const outcomes = perProcess(
  ({ sql }) =>
    new GroupCommit<Outcome, SendRow | undefined>(items =>
      // BEGIN goes out with the updates, COMMIT with the record of the changes: two round trips
      pipelinedTransaction(sql, async (tx, commit) => {
        const values: OutcomeValues[] = items.map(o => ({
          id: o.send.id,
          status: o.status,
          accepted: o.accepted,
          rejected: o.rejected,
          relay_response: o.relay_response,
          error_code: o.error_code,
          error_message: o.error_message,
          repeat_next_at: o.repeat_next_at,
        }))
        const jobIds = items.flatMap(o => (o.jobId ? [o.jobId] : []))
        const [rows] = await Promise.all([
          recordOutcomes(tx, values),
          // a failed execution has no next tick
          ...items.filter(o => o.repeat_next_at).map(o => enqueue(tx, EXECUTE_KIND, { send_id: o.send.id }, { runAt: o.repeat_next_at! })),
          jobIds.length ? deleteJobs(tx, jobIds) : undefined,
        ])
        const byId = new Map(rows.map(r => [r.id, r]))
        const updated = items.map(o => byId.get(o.send.id))
        await commit(recordChanges(tx, updated.filter((r): r is SendRow => r !== undefined).map(sendStateChange)))
        return updated
      }),
    ),
)

/** The feed's record of a send's new state, in the transaction that sets it. */
function sendStateChange(row: SendRow): ChangeInput {
  return {
    orgId: row.org_id,
    type: 'send.status_changed',
    resource: { type: 'send', id: row.id },
    addresses: [row.from_address],
    data: { status: row.status, email_id: row.last_email_id, error_code: row.error_code },
  }
}

export const executeJob: JobKind<{ send_id: string }> = {
  kind: EXECUTE_KIND,
  handle: async (ctx, payload) => void (await executeSend(ctx, payload.send_id)),
}
