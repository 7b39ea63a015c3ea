/**
 * POST /v1/send-mail and the sent-email operations. A send is recorded with its job in one
 * transaction (under the Idempotency-Key), an immediate send with its message built, signed and
 * stored, then relayed inline so the response can say what the relay answered; the job stays as
 * the safety net should this process die before the relay answered. With `Prefer: respond-async`
 * (RFC 7240) the request answers 202 once the send and its job are committed, and the job relays
 * after the answer, in this process; the outcome reaches the client as a scheduled send's does.
 */
import { randomUUIDv7 } from 'bun'
import { perProcess, type AppContext } from '../context'
import { GroupCommit } from '../db/group-commit'
import { pipelinedTransaction } from '../db/transaction'
import type { Tx } from '../db/client'
import type { Auth } from '../auth/principal'
import { planDefinition } from '../account/plans'
import { sha256 } from '../crypto'
import { ApiError, errors, type PlainCode } from '../errors'
import { canonicalJson, idempotencyBusy, idempotent } from '../http/idempotency'
import { recordedKeys, recordResponses, releaseKey } from '../http/idempotency-queries'
import { iso, parseTimestamp } from '../http/timestamps'
import type { PageRequest } from '../http/pagination'
import { deleteJobsFor, enqueueEachWith, rescheduleUnclaimed } from '../jobs/queue'
import { inlineHolderId, runClaimed } from '../jobs/run'
import type { Job } from '../jobs/queue'
import { recordChanges, type ChangeInput } from '../changes/record'
import { sendChange } from '../changes/sources'
import { renderStored } from '../templates/service'
import type { Rendered } from '../templates/render'
import { mailEvents } from '../events'
import { log } from '../log'
import { compose, EXECUTE_KIND, executeJob, executeSend, sendingKeyFor, sentChange, storeComposed, type Built, type Composed } from './execute'
import type { SigningKey } from '../mail/outbound/dkim'
import type { NormalizedRequest, SendMailRequest, SendRow } from './model'
import { enforceKnownRecipients } from './gates'
import { replyContext } from './replies'
import type { SendThread } from './forward'
import { requireSender } from './senders'
import { countSends, lockSendCounts, readSendCounts, type CountedSends } from './send-count-queries'
import { sendRecipients } from './recipient-reports'
import { enforceNotSuppressed } from './suppression-gate'
import { insertSends, readSendFacts, tryLockKeys, type SendFactsRow } from './accept-queries'
import { cancelScheduled, rescheduleSend, sendById, sendOfOrg, sendsPage, setRepeatInterval, stopRepeat } from './sent-email-queries'

/** How long an immediate send's job waits before a worker takes it over from a request that died. */
const INLINE_GRACE_MS = 60_000
const SEND_MAX_ATTEMPTS = 5
const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024

const asList = (v: string | string[] | undefined) => (v === undefined ? undefined : Array.isArray(v) ? v : [v])

/** `rendered`: the content of `body.template`, which replaces subject and bodies. */
function normalize(body: SendMailRequest, rendered: Rendered | null = null): NormalizedRequest {
  const attachmentBytes = (body.attachments ?? []).reduce((n, a) => n + Math.floor((a.content.replace(/\s/g, '').length * 3) / 4), 0)
  if (attachmentBytes > MAX_ATTACHMENT_BYTES) throw errors.validation('attachments', 'must total at most 10 MB')
  if (!body.to && !body.in_reply_to_email_id) throw errors.validation('to', 'is required (unless in_reply_to_email_id is given)')
  const { template, ...rest } = body
  if (template) {
    for (const field of ['subject', 'body_text', 'body_html'] as const) {
      if (body[field] !== undefined) throw errors.validation(field, 'must not be given with template (the template provides it)')
    }
  } else {
    if (body.subject === undefined) throw errors.validation('subject', 'is required (unless template is given)')
    if (body.body_text === undefined) throw errors.validation('body_text', 'is required (unless template is given)')
  }
  const content = rendered
    ? { subject: rendered.subject, body_text: rendered.body_text, ...(rendered.body_html !== null && { body_html: rendered.body_html }) }
    : { subject: body.subject!, body_text: body.body_text! }
  return { ...rest, ...content, to: asList(body.to) ?? [], reply_to: asList(body.reply_to) }
}

export const presentSend = (s: SendRow) => ({
  id: s.id,
  status: s.status as typeof import('./model').SEND_STATES[number],
  from: s.from_address,
  to: s.request.to,
  cc: s.request.cc ?? [],
  bcc: s.request.bcc ?? [],
  subject: s.request.subject,
  scheduled_at: iso(s.scheduled_at),
  email_id: s.last_email_id,
  thread_id: s.thread_id,
  accepted: s.accepted,
  rejected: s.rejected,
  recipients: sendRecipients(s),
  relay_response: s.relay_response,
  error: s.error_code ? { code: s.error_code, message: s.error_message ?? '' } : null,
  repeat: s.repeat_every_minutes
    ? {
        every_minutes: s.repeat_every_minutes,
        ticks: s.ticks,
        next_at: iso(s.repeat_next_at),
        stopped_at: iso(s.repeat_stopped_at),
        stopped_by: s.repeat_stopped_by,
      }
    : null,
  created_at: iso(s.created_at)!,
  updated_at: iso(s.updated_at)!,
})

async function loadSend(ctx: AppContext, orgId: string, id: string): Promise<SendRow> {
  const send = await sendOfOrg(ctx.sql, orgId, id)
  if (!send) throw errors.notFound('sent email')
  return send
}

/** The organization's sends, newest first (read by GraphQL's `sentEmails`). */
export const listSends = (ctx: AppContext, orgId: string, page: PageRequest) => sendsPage(ctx.sql, orgId, page)

export const getSend = async (ctx: AppContext, orgId: string, id: string) => presentSend(await loadSend(ctx, orgId, id))

/** What the checks of a send read (`readSendFacts`), with the recipients checked against the suppression list. */
interface SendFacts extends SendFactsRow {
  checked: string[]
}

const recipientsOf = (r: Pick<NormalizedRequest, 'to' | 'cc' | 'bcc'>) => [...r.to, ...(r.cc ?? []), ...(r.bcc ?? [])]

async function sendFacts(tx: Tx, orgId: string, request: NormalizedRequest, idem: { scope: string; key: string }): Promise<SendFacts> {
  const checked = recipientsOf(request)
  return { ...(await readSendFacts(tx, orgId, request.from, checked, idem)), checked }
}

/**
 * Refuses a send the organization may not make right now: wrong sender, reply-only gates, abuse
 * limits, in that order. The sender's error lists the valid senders, read only then.
 */
async function authorize(tx: Tx, auth: Auth, r: NormalizedRequest, facts: SendFacts): Promise<SendLimits> {
  // Authentication rule 2: an agent connection key sends only as the address it is bound to.
  if (auth.boundAddress !== undefined && r.from.toLowerCase() !== auth.boundAddress) {
    throw errors.forbidden(`from: a connection key sends only as ${auth.boundAddress}`)
  }
  if (!facts.sender) await requireSender(tx, auth.orgId, r.from)
  // (a reply's recipient, filled in since the facts were read, is looked up here)
  await enforceNotSuppressed(tx, auth.orgId, recipientsOf(r), facts)
  const plan = planDefinition(auth.plan)
  if (plan.replyOnly) await enforceKnownRecipients(tx, auth.orgId, r.from, recipientsOf(r))
  // The plan's limits unless an operator set the organization's own (`admin org set-send-limits`).
  const limits = { hour: facts.per_hour ?? plan.limits.send_per_hour, day: facts.per_day ?? plan.limits.send_per_day }
  const over = overLimit(limits, facts)
  if (over) throw over
  return limits
}

/** An organization's send limits, per hour and per day. */
interface SendLimits {
  hour: number
  day: number
}

/** The 429 of a send that `counts` (the sends already counted) leave no room for, or null. */
function overLimit(limits: SendLimits, counts: { hour: number; day: number }): ApiError | null {
  if (counts.hour < limits.hour && counts.day < limits.day) return null
  const hourly = counts.hour >= limits.hour
  return errors.retryLater(
    'rate_limited',
    `send-mail: at most ${hourly ? `${limits.hour} per hour` : `${limits.day} per day`} per organization`,
    hourly ? 3600 : 86400,
  )
}

function response(send: SendRow, replay: boolean) {
  return {
    id: send.id,
    status: send.status === 'sending' ? 'queued' : send.status,
    from: send.from_address,
    accepted: send.accepted,
    rejected: send.rejected,
    idempotent_replay: replay,
    scheduled_at: iso(send.scheduled_at),
    thread_id: send.thread_id,
  }
}

/** A send's row as it is about to be inserted (with the defaults the table fills in). */
function draft(
  id: string,
  orgId: string,
  status: 'scheduled' | 'sending',
  request: NormalizedRequest,
  scheduledAt: Date | null,
  threadId: string | null,
): SendRow {
  const now = new Date()
  return {
    id,
    org_id: orgId,
    status,
    request,
    from_address: request.from.toLowerCase(),
    scheduled_at: scheduledAt,
    repeat_every_minutes: request.repeat?.every_minutes ?? null,
    repeat_next_at: null,
    repeat_stopped_at: null,
    repeat_stopped_by: null,
    ticks: 0,
    thread_id: threadId,
    last_email_id: null,
    last_message_id: null,
    accepted: [],
    rejected: [],
    recipient_reports: {},
    relay_response: null,
    error_code: null,
    error_message: null,
    created_at: now,
    updated_at: now,
  }
}

/** What an immediate send's request wrote, to run its job inline. */
interface Inline {
  jobId: string | null
  row: SendRow
  built?: Built
}

/** The error a failed immediate send answers with (the relay's verdict). */
function relayFailure(send: SendRow): ApiError {
  return new ApiError((send.error_code as PlainCode) ?? 'outbound_relay_failed', send.error_message ?? 'relay failed', { send_id: send.id })
}

/** Which of `sends` fit under their limits, in order, given what `readSendCounts` read: null, or the 429 of one that does not. */
function admit(sends: Prepared[], counted: CountedSends[]): (ApiError | null)[] {
  const counts = new Map(counted.map(c => [c.org_id, { hour: c.hour, day: c.day }]))
  return sends.map(p => {
    const c = counts.get(p.row.org_id)!
    const over = overLimit(p.limits, c)
    if (!over) c.hour++, c.day++
    return over
  })
}

/** A send checked and built, ready to be written. */
interface Prepared {
  scope: string
  key: string
  payloadHash: Buffer
  row: SendRow
  future: boolean
  scheduledAt: Date | null
  composed?: Composed
  limits: SendLimits
  /** recorded under the key: `accepted`, an immediate send answered before its relay (respond-async) */
  data: { send_id: string; inline: boolean; accepted?: true }
}

/**
 * The checks of a send (reply context, sender, gates, limits) and its first message, built and
 * signed; reads only. `request` gets the reply context and the inbox's display name.
 */
async function prepareSend(
  sql: Tx,
  auth: Auth,
  request: NormalizedRequest,
  scheduledAt: Date | null,
  signingKey: SigningKey | null | undefined,
  facts: SendFacts,
  { scope, key, payloadHash, thread, respondAsync }: { scope: string; key: string; payloadHash: Buffer; thread?: SendThread; respondAsync: boolean },
): Promise<Prepared> {
  let threadId: string | null = thread?.id ?? null
  if (thread) request.reply = { references: thread.references }
  if (request.in_reply_to_email_id) {
    const reply = await replyContext(sql, auth.orgId, request.in_reply_to_email_id, auth.boundAddress)
    threadId = reply.threadId
    request.reply = { in_reply_to: reply.inReplyTo, references: reply.references }
    if (!request.to.length) request.to = [reply.to]
  }
  const limits = await authorize(sql, auth, request, facts)
  // Mail sent as an inbox shows the inbox's name, unless the request names the sender itself.
  if (request.from_name === undefined && facts.display_name) request.from_name = facts.display_name
  const id = randomUUIDv7()
  const future = scheduledAt !== null && scheduledAt.getTime() > Date.now()
  const row = draft(id, auth.orgId, future ? 'scheduled' : 'sending', request, scheduledAt, threadId)
  // An immediate send's first message is built and stored with the send, as its job would
  // (the job then only relays it, as after a crash between building and relaying). Should
  // building fail, the send is recorded unbuilt and its job builds it, and fails, as before.
  const composed = future || !signingKey ? undefined : await compose(row, signingKey).catch(() => undefined)
  if (composed) Object.assign(row, { ticks: 1, last_message_id: composed.messageId })
  const data = { send_id: id, inline: !future, ...(respondAsync && !future && { accepted: true as const }) }
  return { scope, key, payloadHash, row, future, scheduledAt, composed, limits, data }
}

/**
 * Writes prepared sends in the caller's transaction: their stored emails, then the sends with
 * their jobs in one statement (an immediate send's job claimed by this process, which runs it
 * once committed), and their count (`countSends`, the rows locked by the caller). The statements
 * go out at once. Returns, for each send, what the inline run
 * needs and the changes to record, last, in the same transaction.
 */
function writeSends(tx: Tx, ctx: AppContext, ps: Prepared[]): Promise<{ inline: Inline; changes: ChangeInput[] }[]> {
  const emailIds = ps.map(p => (p.composed ? randomUUIDv7() : null))
  const stored = Promise.all(ps.map((p, i) => p.composed && storeComposed(ctx, tx, p.row, p.composed, emailIds[i]!)))
  const jobs = enqueueEachWith(
    tx,
    insertSends(
      tx,
      ps.map((p, i) => ({ row: p.row, emailId: emailIds[i]! })),
    ),
    EXECUTE_KIND,
    ps.map(p => ({
      payload: { send_id: p.row.id },
      runAt: p.future ? p.scheduledAt! : new Date(Date.now() + INLINE_GRACE_MS),
      maxAttempts: SEND_MAX_ATTEMPTS,
      claimedBy: p.future ? undefined : inlineHolderId(ctx),
    })),
  )
  const counted = countSends(
    tx,
    ps.map(p => p.row.org_id),
  )
  return Promise.all([stored, jobs, counted]).then(([emails, jobIds]) =>
    ps.map(({ row, composed }, i) => {
      const email = emails[i]
      if (email) Object.assign(row, { last_email_id: email.id, thread_id: email.threadId })
      const changes = [sendChange('send.created', row), ...(email && composed ? [sentChange(row, email, composed.mail.subject)] : [])]
      const built = email && composed ? { emailId: email.id, raw: composed.raw, text: composed.text } : undefined
      return { inline: { jobId: jobIds[i]!, row, built }, changes }
    }),
  )
}

/**
 * The sends that are ready while a batch is being written go together in the next transaction
 * (group commit): each under its Idempotency-Key as `idempotent` would (the key locked, its
 * record checked once the lock is held, then written with the send), one record of their changes
 * and one commit for all. A key another request holds, or repeated within the batch, answers
 * 'busy'; a key recorded meanwhile, 'recorded' (answered by `idempotent`); a send its
 * organization's limits leave no room for, its 429 (nothing written).
 */
const sendWrites = perProcess(
  (ctx: AppContext) =>
    new GroupCommit<Prepared, Inline | 'busy' | 'recorded' | ApiError>(items =>
      // BEGIN goes out with the key lookups, COMMIT with the record of the changes: three round trips in all
      pipelinedTransaction(ctx.sql, async (tx, commit) => {
        const names = items.map(p => `${p.scope}\n${p.key}`)
        // Two statements in one round trip, run in order: the lookups see what a holder of a key committed before its lock was taken.
        const locks = tryLockKeys(tx, names)
        const lookup = recordedKeys(tx, items).execute()
        const orgIds = items.map(p => p.row.org_id)
        const [locked, found, , counted] = await Promise.all([locks, lookup, lockSendCounts(tx, orgIds), readSendCounts(tx, orgIds)])
        const recorded = new Set(found.map(r => `${r.scope}\n${r.key}`))
        const keyed = items.map((_, i) => (names.indexOf(names[i]!) !== i || !locked[i]!.locked ? 'busy' : recorded.has(names[i]!) ? 'recorded' : 'write'))
        const limited = admit(
          items.filter((_, i) => keyed[i] === 'write'),
          counted,
        )
        let n = 0
        const verdicts = keyed.map(v => (v === 'write' ? (limited[n++] ?? 'write') : v))
        // written in the order of their organizations, as other batches lock the rows they share
        const writing = items.filter((_, i) => verdicts[i] === 'write').sort((a, b) => (a.row.org_id < b.row.org_id ? -1 : a.row.org_id > b.row.org_id ? 1 : 0))
        const written = writing.length ? writeSends(tx, ctx, writing) : Promise.resolve([])
        const record = writing.length
          ? recordResponses(
              tx,
              writing.map(p => ({
                scope: p.scope,
                key: p.key,
                requestHash: p.payloadHash.toString('hex'),
                sealed: ctx.keys.encrypt(JSON.stringify(p.data)),
              })),
            ).execute()
          : undefined
        const [results] = await Promise.all([written, record])
        // last in the transaction, as recordChanges must be
        await commit(
          recordChanges(
            tx,
            results.flatMap(w => w.changes),
          ),
        )
        const inline = new Map(writing.map((p, n) => [p, results[n]!.inline]))
        return items.map((p, i) => (verdicts[i] === 'write' ? inline.get(p)! : (verdicts[i] as 'busy' | 'recorded' | ApiError)))
      }),
    ),
)

/**
 * The answer of an immediate send made with respond-async, the same on a replay: queued, with the
 * recipients the service's own gates let through (a recipient they refuse refuses the whole send,
 * so none is rejected here); what the relay makes of them shows on the send afterwards.
 */
const acceptedResponse = (send: SendRow, replay: boolean) => ({
  ...response(send, replay),
  status: 'queued',
  accepted: recipientsOf(send.request),
  rejected: [],
})

/** The job of an immediate send, claimed by this process when it was inserted. */
const claimedJob = (ctx: AppContext, jobId: string, sendId: string): Job => ({
  id: jobId,
  kind: EXECUTE_KIND,
  payload: { send_id: sendId },
  attempts: 1,
  max_attempts: SEND_MAX_ATTEMPTS,
  created_at: new Date(),
  locked_by: inlineHolderId(ctx),
})

/** Runs the send's claimed job from what the request wrote: the relay, its outcome recorded and the job deleted with it. */
const runWritten = (ctx: AppContext, sendId: string, written: Inline) => {
  const job = claimedJob(ctx, written.jobId!, sendId)
  return runClaimed(
    ctx,
    executeJob,
    job,
    () => executeSend(ctx, sendId, written.row, written.built, job.id),
    final => final !== null,
  )
}

/**
 * `thread`: the thread the send joins and the References it carries (a forward's: forward.ts),
 * where it answers no email. `respondAsync` (the request's `Prefer: respond-async`): an immediate
 * send answers once it is committed (`accepted`: REST's 202) and is relayed after the answer.
 */
export async function sendMail(
  ctx: AppContext,
  auth: Auth,
  body: SendMailRequest,
  headerKey: string | undefined,
  thread?: SendThread,
  respondAsync = false,
): Promise<{ key: string; data: ReturnType<typeof response>; accepted: boolean }> {
  normalize(body) // the request's own checks before a template is read
  const request = normalize(body, body.template ? await renderStored(ctx.sql, auth.orgId, body.template) : null)
  const scheduledAt = request.scheduled_at ? parseTimestamp('scheduled_at', request.scheduled_at) : null
  // Without a header the key is the payload itself: two identical sends in a row are one send.
  const payloadHash = sha256(canonicalJson(request))
  const key = headerKey ?? `derived_${payloadHash.toString('base64url').slice(0, 32)}`
  const scope = `org:${auth.orgId}:send-mail`
  // Read before the transaction: a key read inside it would wait for a second connection of the
  // pool, which transactions waiting the same way could all be holding. (No key: the sender is
  // refused below, or its domain was verified a moment ago; either way the job builds.)
  const signingKey =
    scheduledAt && scheduledAt.getTime() > Date.now() ? undefined : await sendingKeyFor(ctx, { org_id: auth.orgId, request }).catch(() => undefined)
  const idem = { scope, key, payload: request, payloadHash }
  // Most sends are new: the key's record, the sender and the limits are read in one statement
  // and the send is checked and built outside any transaction, then written with the sends in
  // flight (group commit). A key already recorded, or recorded meanwhile, takes the transaction
  // of `idempotent`, which answers from the record.
  const facts = await sendFacts(ctx.sql, auth.orgId, request, idem)
  let prepared = facts.recorded
    ? undefined
    : await prepareSend(ctx.sql, auth, request, scheduledAt, signingKey, facts, { scope, key, payloadHash, thread, respondAsync })
  const batched = prepared && (await sendWrites(ctx).submit(prepared))
  if (batched === 'busy') throw idempotencyBusy()
  if (batched instanceof ApiError) throw batched
  const outcome =
    batched && batched !== 'recorded'
      ? { data: prepared!.data, replayed: false, local: batched }
      : await idempotent(ctx.sql, ctx.keys, idem, async tx => {
          prepared ??= await prepareSend(tx, auth, request, scheduledAt, signingKey, await sendFacts(tx, auth.orgId, request, idem), {
            scope,
            key,
            payloadHash,
            thread,
            respondAsync,
          })
          const p = prepared
          // in the order of a batch: the counts locked and checked, the send's statements with its count, its changes
          const [, counted] = await Promise.all([lockSendCounts(tx, [p.row.org_id]), readSendCounts(tx, [p.row.org_id])])
          const [over] = admit([p], counted)
          if (over) throw over
          const local = writeSends(tx, ctx, [p]).then(async ([w]) => (await recordChanges(tx, w!.changes), w!.inline))
          return { status: 200, data: p.data, local }
        })
  const { send_id: sendId, inline, accepted } = outcome.data
  if (!outcome.replayed) mailEvents(ctx).emitChange(auth.orgId)
  const written = inline ? outcome.local : undefined
  if (accepted) {
    // answered now; the job relays after the answer. Should this process stop first, the job's
    // lease runs out (or is handed back at shutdown) and a worker relays the stored message.
    const data = acceptedResponse(written?.row ?? (await loadSend(ctx, auth.orgId, sendId)), outcome.replayed)
    if (written?.jobId)
      runWritten(ctx, sendId, written).catch(error => log.error('send: relay after the answer failed', { send_id: sendId, error: (error as Error).message }))
    return { key, data, accepted: true }
  }
  // The send's job, claimed when it was inserted, run here: it starts from what was just written,
  // deletes the job with the outcome and hands back the final row.
  let send = written?.jobId ? await runWritten(ctx, sendId, written) : null
  send ??= await loadSend(ctx, auth.orgId, sendId)
  if (send.status === 'failed' && !send.relay_response) {
    // Nothing was sent: release the key so that a retry sends for real.
    if (!outcome.replayed) await releaseKey(ctx.sql, scope, key)
    throw relayFailure(send)
  }
  if (send.status === 'failed') throw relayFailure(send)
  return { key, data: response(send, outcome.replayed), accepted: false }
}

/** The checks of a send-mail request that need no database (a draft is held to them too); returns it normalized. */
export function validateSendRequest(body: SendMailRequest): NormalizedRequest {
  const request = normalize(body)
  if (request.scheduled_at) parseTimestamp('scheduled_at', request.scheduled_at)
  return request
}

/** The synthetic answer of the sandbox: validated like a real send; nothing is sent, queued or stored. */
export function demoSend(body: SendMailRequest) {
  if (body.template) throw errors.validation('template', 'the sandbox reads no stored templates: send subject and body_text')
  const request = validateSendRequest(body)
  return {
    id: randomUUIDv7(),
    status: 'queued',
    from: request.from,
    accepted: [...request.to, ...(request.cc ?? []), ...(request.bcc ?? [])],
    rejected: [],
    idempotent_replay: false,
    demo: true as const,
  }
}

const notScheduled = (s: SendRow) => new ApiError('not_scheduled', `sent email: is ${s.status}, not scheduled`, { status: s.status })

/** PATCH /v1/sent-emails/{id}: a new time for a scheduled send, or a new interval (or none) for a repeat. */
export async function updateSend(ctx: AppContext, orgId: string, id: string, patch: { scheduled_at?: string; repeat?: { every_minutes: number } | null }) {
  const at = patch.scheduled_at ? parseTimestamp('scheduled_at', patch.scheduled_at) : null
  return ctx.sql.begin(async tx => {
    const send = await sendOfOrg(tx, orgId, id, true)
    if (!send) throw errors.notFound('sent email')
    const repeating = send.repeat_every_minutes !== null && !send.repeat_stopped_at
    if (at) {
      if (send.status !== 'scheduled') throw notScheduled(send)
      await rescheduleSend(tx, id, at)
      await rescheduleUnclaimed(tx, EXECUTE_KIND, 'send_id', id, at)
    }
    if (patch.repeat !== undefined) {
      if (!repeating && send.status !== 'scheduled') throw notScheduled(send)
      if (patch.repeat === null) await stopRepeat(tx, id)
      else await setRepeatInterval(tx, id, patch.repeat.every_minutes)
    }
    const updated = await sendById(tx, id)
    await recordChanges(tx, [sendChange(patch.repeat === null && !at ? 'send.canceled' : 'send.rescheduled', updated!)])
    return presentSend(updated!)
  })
}

/** POST /v1/sent-emails/{id}/cancel: cancels a scheduled send, or stops a repeat. */
export async function cancelSend(ctx: AppContext, orgId: string, id: string) {
  return ctx.sql.begin(async tx => {
    const send = await sendOfOrg(tx, orgId, id, true)
    if (!send) throw errors.notFound('sent email')
    if (send.status === 'scheduled') {
      await cancelScheduled(tx, id)
      await deleteJobsFor(tx, EXECUTE_KIND, 'send_id', id, { unclaimed: true })
    } else if (send.repeat_every_minutes !== null && !send.repeat_stopped_at) {
      await stopRepeat(tx, id)
    } else throw notScheduled(send)
    const updated = await sendById(tx, id)
    await recordChanges(tx, [sendChange('send.canceled', updated!)])
    return presentSend(updated!)
  })
}
