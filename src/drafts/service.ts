/**
 * Drafts: a send-mail request kept to be sent later (validated as a send is), and sends held for
 * approval. A sender address with an approval policy never sends on its own: a send from it
 * (POST /v1/send-mail, through the `holdSend` seam) or the send of a draft from it makes the
 * draft `pending_approval`, and an owner or admin approves it (it goes out) or rejects it (it
 * keeps the reason), through the API or a one-time link (approval-page.ts).
 *
 * A draft goes out through send-mail under its own Idempotency-Key (`send_key`: the held
 * request's key, or `draft_<id>`), after its status moved to `sending` under its row lock: two
 * approvals, or an approval and a retry, make one send, and the relay receives it once.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import type { Auth } from '../auth/principal'
import { requireOwnerOrAdmin } from '../account/roles'
import { sha256 } from '../crypto'
import { ApiError, errors } from '../errors'
import { canonicalJson } from '../http/idempotency'
import type { PageRequest } from '../http/pagination'
import { enqueue } from '../jobs/queue'
import { mailEvents } from '../events'
import type { SendHold } from '../sending/hold'
import type { SendMailRequest } from '../sending/model'
import { replyContext } from '../sending/replies'
import { requireSender } from '../sending/senders'
import { sendMail, validateSendRequest } from '../sending/service'
import { recordDraftEvent } from './events'
import { issueLink, NOTIFY_KIND } from './links'
import type { DraftRow, DraftState } from './model'
import { presentDraft } from './present'
import * as q from './queries'

/** Who approves or rejects: through the API, or a link made by that person. */
export interface Decider {
  via: 'api' | 'link'
  userId: string | null
}

const notFound = () => errors.notFound('draft')
const wrongState = (d: DraftRow, wanted: string) => errors.conflict(`draft: is ${d.status}, not ${wanted}`, { status: d.status, reason: 'draft_state' })

/**
 * The checks a send would make first: the request's own, a connection key's address, the
 * sender, and the message answered (one the caller may read, and may answer), so that whoever
 * approves the draft later sends nothing its author could not have sent.
 */
async function checkRequest(sql: Tx, auth: Auth, body: SendMailRequest): Promise<void> {
  validateSendRequest(body)
  if (auth.boundAddress !== undefined && body.from.toLowerCase() !== auth.boundAddress) {
    throw errors.forbidden(`from: a connection key sends only as ${auth.boundAddress}`)
  }
  await requireSender(sql, auth.orgId, body.from)
  if (body.in_reply_to_email_id) await replyContext(sql, auth.orgId, body.in_reply_to_email_id, auth.boundAddress)
}

/** A draft the caller may see (a connection key: only its address's), or 404. */
async function visible(sql: Tx, auth: Auth, id: string, lock = false): Promise<DraftRow> {
  const d = await (lock ? q.lockDraft : q.findDraft)(sql, auth.orgId, id, auth.boundAddress)
  if (!d) throw notFound()
  return d
}

export async function createDraft(ctx: AppContext, auth: Auth, body: SendMailRequest): Promise<DraftRow> {
  await checkRequest(ctx.sql, auth, body)
  const id = randomUUIDv7()
  return (await q.insertDraft(ctx.sql, { id, orgId: auth.orgId, status: 'draft', request: body, sendKey: `draft_${id}` }))!
}

export const getDraft = (ctx: AppContext, auth: Auth, id: string) => visible(ctx.sql, auth, id)

export const listDrafts = (ctx: AppContext, auth: Auth, page: PageRequest, status?: DraftState) =>
  q.listDraftRows(ctx.sql, auth.orgId, page, { status, address: auth.boundAddress })

/** Changes the fields given (the others stay), while the draft is a draft. */
export async function updateDraft(ctx: AppContext, auth: Auth, id: string, patch: Partial<SendMailRequest>): Promise<DraftRow> {
  // REST's schema refuses an empty body; a tool's arguments are checked here
  if (!Object.keys(patch).length) throw errors.validation('body', 'give at least one field of the draft to change')
  return ctx.sql.begin(async tx => {
    const d = await visible(tx, auth, id, true)
    if (d.status !== 'draft') throw wrongState(d, 'draft (only a draft not sent yet can change)')
    const request = { ...d.request, ...patch }
    await checkRequest(tx, auth, request)
    return q.replaceRequest(tx, id, request)
  })
}

export async function deleteDraft(ctx: AppContext, auth: Auth, id: string): Promise<{ id: string }> {
  return ctx.sql.begin(async tx => {
    const d = await visible(tx, auth, id, true)
    if (d.status === 'sending') throw wrongState(d, 'draft, pending_approval, sent or rejected (its send is being made)')
    await q.deleteDraftRow(tx, id)
    return { id }
  })
}

/** Moves a draft to pending_approval, with its events and the mail to the policy's approver, in the caller's transaction. */
async function holdForApproval(tx: Tx, ctx: AppContext, d: DraftRow, notify: boolean): Promise<DraftRow> {
  const held = d.status === 'pending_approval' ? d : await q.setStatus(tx, d.id, 'pending_approval')
  if (notify) await enqueue(tx, NOTIFY_KIND, { draft_id: d.id, org_id: d.org_id })
  await recordDraftEvent(tx, ctx, 'draft.pending_approval', held)
  return held
}

/**
 * Makes the draft's send (status `sending`) as `auth`, under its key: the draft becomes `sent`
 * with its send_id; a failed send is kept as its send_error and thrown.
 */
async function deliver(ctx: AppContext, auth: Auth, d: DraftRow): Promise<DraftRow> {
  try {
    const { data } = await sendMail(ctx, auth, d.request, d.send_key)
    return (await q.markSent(ctx.sql, d.id, data.id)) ?? d
  } catch (error) {
    if (error instanceof ApiError) await q.markSendError(ctx.sql, d.id, { code: error.code, message: error.message })
    throw error
  }
}

/**
 * POST /v1/drafts/{id}/send: a draft from an address with an approval policy waits for approval;
 * any other goes out. Sending again answers the draft as it is (a failed send is tried again).
 */
export async function sendDraft(ctx: AppContext, auth: Auth, id: string): Promise<DraftRow> {
  const d = await ctx.sql.begin(async tx => {
    const d = await visible(tx, auth, id, true)
    if (d.status === 'rejected') throw wrongState(d, 'draft')
    if (d.status !== 'draft') return d
    await checkRequest(tx, auth, d.request)
    const policy = await q.policyFor(tx, d.org_id, d.from_address)
    return policy ? holdForApproval(tx, ctx, d, policy.notify_email !== null) : q.setStatus(tx, d.id, 'sending')
  })
  if (d.status === 'pending_approval') mailEvents(ctx).emitChange(d.org_id)
  return d.status === 'sending' ? deliver(ctx, auth, d) : d
}

/**
 * The `holdSend` seam of send-mail (src/plugins.ts): a send from an address with an approval
 * policy becomes a draft pending approval, once per Idempotency-Key (the request's, or one
 * derived from its payload): a retry answers the same draft.
 */
export const holdSend: SendHold = async (call, body) => {
  const { ctx, auth } = call
  const policy = await q.policyFor(ctx.sql, auth.orgId, body.from)
  if (!policy) return null
  await checkRequest(ctx.sql, auth, body)
  const key = call.idempotencyKey ?? `held_${sha256(canonicalJson(body)).toString('base64url').slice(0, 32)}`
  const made = await ctx.sql.begin(async tx => {
    const d = await q.insertDraft(tx, { id: randomUUIDv7(), orgId: auth.orgId, status: 'pending_approval', request: body, sendKey: key })
    return d && holdForApproval(tx, ctx, d, policy.notify_email !== null)
  })
  const d = made ?? (await q.draftBySendKey(ctx.sql, auth.orgId, key))!
  if (!made && canonicalJson(d.request) !== canonicalJson(body)) {
    throw errors.conflict('Idempotency-Key: already used with a different request payload', { reason: 'idempotency_key_reused' })
  }
  if (made) mailEvents(ctx).emitChange(auth.orgId)
  call.header?.('idempotency-key', key)
  const draft = presentDraft(d)
  return {
    id: d.id,
    draft_id: d.id,
    status: d.status,
    from: draft.from,
    accepted: [],
    rejected: [],
    idempotent_replay: !made,
    scheduled_at: draft.scheduled_at,
    thread_id: null,
  }
}

/**
 * 403 unless the credential may approve: a person's key or token whose person is an owner or
 * admin now. An agent's connection key never may (its own drafts least of all), nor a function's
 * runtime key, which no person made.
 */
export async function requireApprover(ctx: AppContext, auth: Auth): Promise<void> {
  if (auth.method === 'connection') throw errors.forbidden("connection key: an agent's key cannot approve or reject drafts; an owner or admin does")
  if (auth.functionId) throw errors.forbidden("function runtime key: a function's key cannot approve or reject drafts; an owner or admin does")
  await requireOwnerOrAdmin(ctx.sql, auth, 'drafts: approving or rejecting')
}

/**
 * Approves a pending draft and sends it as `auth`. Approving a draft that is being sent tries its
 * send again (under the same key, so never twice); a sent draft is answered as it is.
 */
export async function approveDraft(ctx: AppContext, auth: Auth, id: string, decider: Decider): Promise<DraftRow> {
  const d = await ctx.sql.begin(async tx => {
    const d = await q.lockDraft(tx, auth.orgId, id)
    if (!d) throw notFound()
    if (d.status === 'sending' || d.status === 'sent') return d
    if (d.status !== 'pending_approval') throw wrongState(d, 'pending_approval')
    const approved = await q.decideDraft(tx, id, 'sending', decider, null)
    await recordDraftEvent(tx, ctx, 'draft.approved', approved)
    return approved
  })
  mailEvents(ctx).emitChange(d.org_id)
  return d.status === 'sending' ? deliver(ctx, auth, d) : d
}

/** Rejects a pending draft, keeping the reason; rejecting it again answers it as it is. */
export async function rejectDraft(ctx: AppContext, orgId: string, id: string, decider: Decider, reason: string | null): Promise<DraftRow> {
  const d = await ctx.sql.begin(async tx => {
    const d = await q.lockDraft(tx, orgId, id)
    if (!d) throw notFound()
    if (d.status === 'rejected') return d
    if (d.status !== 'pending_approval') throw wrongState(d, 'pending_approval')
    const rejected = await q.decideDraft(tx, id, 'rejected', decider, reason)
    await recordDraftEvent(tx, ctx, 'draft.rejected', rejected)
    return rejected
  })
  mailEvents(ctx).emitChange(orgId)
  return d
}

/** POST /v1/drafts/{id}/approval-link: a one-time link acting with the caller's authority, mailed to `sendTo` when given. */
export async function createApprovalLink(ctx: AppContext, auth: Auth, id: string, sendTo: string | null, seconds: number) {
  await requireApprover(ctx, auth)
  const d = await visible(ctx.sql, auth, id)
  if (d.status !== 'pending_approval') throw wrongState(d, 'pending_approval')
  return issueLink(ctx, d, auth.userId, sendTo, seconds)
}
