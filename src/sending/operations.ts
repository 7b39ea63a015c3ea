/**
 * Sends as operations (src/http/operation.ts): sending (POST /v1/send-mail, with its
 * Idempotency-Key) and the MCP tools that compose a send of their own (a reply, a forward), the
 * sent mail of the organization, reschedule and cancel, stopping a repeat as its recipient, and
 * the verified senders. The public sandbox (POST /v1/send-mail/demo) stays in routes.ts.
 */
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { getEmail } from '../mail/email-queries'
import { errors } from '../errors'
import { listOperation, operation, type OperationCall } from '../http/operation'
import { Address, OneOf } from '../http/schema'
import { prefersRespondAsync, RESPOND_ASYNC_APPLIED } from '../http/prefer'
import { Timestamp } from '../http/timestamps'
import { BatchBody, BatchResult, MAX_BATCH, sendBatch } from './batch'
import { FORWARD_MODES, forwardedMessage, type SendThread } from './forward'
import { SEND_MAIL_MAX_BODY_BYTES, SendMailBody, type SendMailRequest, SendResponse, SentEmail } from './model'
import { relayOf } from './relay'
import { stopRepeatAsRecipient } from './repeat'
import { validSenders } from './senders'
import { cancelSend, getSend, listSends, presentSend, sendMail, updateSend } from './service'

const TAG = 'Sending'
const Id = (description?: string) => ({ id: t.String({ format: 'uuid', ...(description && { description }) }) })

// The MCP tools of a send require their idempotency_key (REST's Idempotency-Key, in the same scope): a model's retry returns the first result and never sends twice.
const IDEMPOTENCY = {
  key: 'required: any unique string for this send (a UUID). Calling again with the same key returns the first result and sends nothing',
}
// A write that returns the same answer when repeated with its key: idempotent, and it reaches other people's mailboxes.
const SEND_HINTS = { idempotentHint: true, openWorldHint: true }
const Uuid = (description: string) => Type.String({ format: 'uuid', description })
const Recipients = Type.Union([Address, Type.Array(Address, { minItems: 1, maxItems: 50 })], { description: 'one address or a list' })
const Scheduling = { scheduled_at: SendMailBody.properties.scheduled_at, repeat: SendMailBody.properties.repeat }
const { in_reply_to_email_id: _reply, to: _to, ...composeFields } = SendMailBody.properties
// RFC 7240: respond-async answers an immediate send once it is committed, before the relay; other preferences are ignored
const PREFER = t.Object({
  prefer: t.Optional(
    t.String({
      description:
        'RFC 7240. `respond-async`: an immediate send answers 202 (Preference-Applied: respond-async) with status queued once it is committed, without waiting for the relay; its outcome shows on GET /v1/sent-emails/{id}, the changes feed (send.status_changed) and the email.bounced webhook. Other preferences are ignored.',
    }),
  ),
})
const RESPOND_ASYNC =
  " With `Prefer: respond-async` (RFC 7240) an immediate send answers 202 with Preference-Applied: respond-async and status queued once the send and its message are committed, without waiting for the relay: accepted lists the recipients the service itself let through, and the relay's verdict (the send's status queued or failed, its error, per-recipient results) shows afterwards on GET /v1/sent-emails/{id}, in the changes feed (send.status_changed) and as email.bounced webhooks for recipients the relay refused; a retry with the same Idempotency-Key answers the same 202. A scheduled send answers as without the header."

/**
 * Sends `body` under the call's key; REST answers the key (derived from the payload without one)
 * in its Idempotency-Key header. A send held for approval (sending/hold.ts) answers 202 instead.
 */
async function send(call: OperationCall, body: SendMailRequest, thread?: SendThread) {
  const held = await call.ctx.plugins.holdSend(call, body)
  if (held) {
    call.status?.(202)
    return held
  }
  const result = await sendMail(call.ctx, call.auth, body, call.idempotencyKey, thread, prefersRespondAsync(call.headers?.prefer))
  call.header?.('idempotency-key', result.key)
  if (result.accepted) call.status?.(202), call.header?.(...RESPOND_ASYNC_APPLIED)
  return result.data
}

export const sendingOperations = [
  operation({
    name: 'send_email',
    method: 'POST',
    path: '/v1/send-mail',
    tag: TAG,
    summary: 'Send an email',
    description:
      'Returns `queued` once the relay accepted the message (or `scheduled`). Idempotency-Key: a retry with the same key returns the original result without sending again; without the header the key is derived from the payload and returned in the Idempotency-Key response header. Relay failures: 502 outbound_unreachable (nothing sent; retrying sends), 504 outbound_relay_timeout (may be in flight; retrying with the same key never sends twice), 502 outbound_relay_failed, 502 outbound_response_malformed, 503 outbound_capacity_exhausted, 500 outbound_key_invalid. ' +
      'When the sender address has an approval policy (PUT /v1/approval-policies/{address}), nothing is sent: the answer is 202 with status pending_approval, and id and draft_id name the draft that waits for an owner or admin (GET /v1/drafts/{id}); a retry with the same Idempotency-Key answers the same draft.' +
      RESPOND_ASYNC,
    headers: PREFER,
    input: SendMailBody,
    bodyLimit: SEND_MAIL_MAX_BODY_BYTES,
    idempotency: IDEMPOTENCY,
    mayAccept: true,
    mcp: {
      // the tool's arguments are its own: `to` always, and no in_reply_to_email_id (reply_to_email answers an email)
      input: [],
      args: Type.Object({ ...composeFields, to: Recipients }),
      description:
        'Sends (or schedules, with scheduled_at) a new email from one of your addresses. Returns queued once the relay accepted it, or pending_approval when the address requires a person to approve its mail first (draft_id: the draft, get_draft shows its state).',
      hints: SEND_HINTS,
    },
    output: SendResponse,
    handle: send,
  }),
  operation({
    name: 'send_email_batch',
    method: 'POST',
    path: '/v1/send-mail/batch',
    tag: TAG,
    summary: `Send up to ${MAX_BATCH} emails in one request`,
    description:
      `Each of \`messages\` (1 to ${MAX_BATCH}) is a POST /v1/send-mail body, checked and sent on its own, in order; the answer is always 200 with one result per message, in the same order: ` +
      '`{success: true, status: 200, data: <the send>}` (202 with status pending_approval for a send held for approval), or `{success: false, status, error: {code, message, details?}}` with the status and error envelope POST /v1/send-mail would have answered for it (a field is named within its message). ' +
      'Every message counts against the send limits; those past them get 429 rate_limited results. Idempotency-Key covers the whole batch: a retry with the same key answers the same array (header idempotent-replayed: true) and sends nothing again; a retry of a batch cut off midway sends only what had not been sent. Without the header, the key is derived from the payload. ' +
      'With `Prefer: respond-async` each immediate message is answered as POST /v1/send-mail answers it with that header (a result of status 202, data.status queued, relayed after the answer), and the batch answers 200 with Preference-Applied: respond-async.',
    headers: PREFER,
    input: BatchBody,
    bodyLimit: SEND_MAIL_MAX_BODY_BYTES,
    idempotency: IDEMPOTENCY,
    mcp: {
      description: `Sends up to ${MAX_BATCH} emails in one call, each \`messages\` entry a send_email argument object (from, to, subject, body_text, ...), checked and sent on its own, in order. Answers \`items\`, one result per message in the same order: {success: true, data: <the send>} or {success: false, status, error}; a failure of one does not stop the others.`,
      hints: SEND_HINTS,
      items: 'one result per message, in the order of messages',
    },
    output: t.Array(BatchResult),
    handle: async (call, { messages }) => {
      const results = await sendBatch(call, messages, send)
      if (results.some(r => r.success && r.status === 202 && r.data.status === 'queued')) call.header?.(...RESPOND_ASYNC_APPLIED)
      return results
    },
  }),
  operation({
    name: 'reply_to_email',
    method: 'POST',
    path: '/v1/send-mail',
    rest: false,
    tag: TAG,
    summary: 'Reply to an email',
    description:
      'Answers a received email in its thread: to its Reply-To (or From), with In-Reply-To and References set and "Re:" added to its subject unless you give one.',
    input: Type.Object({
      email_id: Uuid('the received email to answer'),
      from: Address,
      body_text: SendMailBody.properties.body_text,
      body_html: SendMailBody.properties.body_html,
      subject: Type.Optional(SendMailBody.properties.subject),
      cc: SendMailBody.properties.cc,
      attachments: SendMailBody.properties.attachments,
      ...Scheduling,
    }),
    idempotency: IDEMPOTENCY,
    mcp: { hints: SEND_HINTS },
    output: SendResponse,
    async handle(call, { email_id, subject, ...rest }) {
      const original = await getEmail(call.ctx.sql, call.auth.orgId, email_id, call.auth.boundAddress)
      const reSubject = subject ?? (/^re:/i.test(original.subject) ? original.subject : `Re: ${original.subject}`)
      return send(call, { ...rest, subject: reSubject, in_reply_to_email_id: email_id })
    },
  }),
  operation({
    name: 'forward_email',
    method: 'POST',
    path: '/v1/emails/:id/forward',
    tag: TAG,
    summary: 'Forward an email',
    description:
      'Sends a stored email (received or sent) on to new recipients, from one of your addresses: `mode: inline` (default) sends your note, then the original quoted with its From, Date, Subject and To, and its attachments; `mode: attachment` sends your note with the original whole, attachments included, attached as message/rfc822. ' +
      "The forward is stored in the thread of the original and its References name it. Answers as POST /v1/send-mail does (its gates, limits, Idempotency-Key and approval holds); 404 for an email that is not the organization's (a connection key: not of its address), or, with mode attachment, whose content was discarded. `Prefer: respond-async` as for POST /v1/send-mail.",
    params: Id('the email to forward'),
    headers: PREFER,
    resource: 'email',
    input: t.Object({
      from: Address,
      to: Recipients,
      cc: SendMailBody.properties.cc,
      bcc: SendMailBody.properties.bcc,
      note: t.Optional(t.String({ maxLength: 100_000, description: 'text above the forwarded message' })),
      mode: t.Optional(OneOf(FORWARD_MODES, { description: 'inline (default): quoted, attachments kept; attachment: the original whole as message/rfc822' })),
      ...Scheduling,
    }),
    idempotency: IDEMPOTENCY,
    mayAccept: true,
    mcp: { hints: SEND_HINTS },
    output: SendResponse,
    async handle(call, { id, note, mode, ...rest }) {
      const forward = await forwardedMessage(call.ctx, call.auth, id, note, mode)
      return send(call, { ...rest, ...forward.content }, forward.thread)
    },
  }),
  listOperation({
    name: 'list_sent_emails',
    method: 'GET',
    path: '/v1/sent-emails',
    tag: TAG,
    summary: 'List sent emails',
    description: 'The sends of the organization, newest first, each in its current state (as GET /v1/sent-emails/{id} answers it).',
    graphql: { field: 'sentEmails', type: 'SentEmail', description: 'Sends (POST /v1/send-mail), newest first (as GET /v1/sent-emails).' },
    list: {
      item: SentEmail,
      scope: ({ auth }) => `sent-emails:${auth.orgId}`,
      fetch: ({ ctx, auth }, _args, page) => listSends(ctx, auth.orgId, page),
      present: presentSend,
    },
  }),
  operation({
    name: 'get_sent_email',
    method: 'GET',
    path: '/v1/sent-emails/:id',
    tag: TAG,
    summary: 'The current state of a send',
    params: Id('the id a send returned (POST /v1/send-mail; the MCP tools send_email, reply_to_email, forward_email)'),
    resource: 'send',
    mcp: { description: 'The current state of a send: queued, scheduled, executed, failed or canceled, with what the relay answered.' },
    output: SentEmail,
    graphql: { field: 'sentEmail', type: 'SentEmail' },
    handle: ({ ctx, auth }, { id }) => getSend(ctx, auth.orgId, id),
  }),
  operation({
    name: 'reschedule_email',
    method: 'PATCH',
    path: '/v1/sent-emails/:id',
    tag: TAG,
    summary: 'Reschedule a scheduled send, or change or stop a repeat',
    description: '409 not_scheduled once the send left the scheduled state.',
    params: Id('the scheduled send'),
    resource: 'send',
    mcp: {
      description:
        'Moves a scheduled send to a new time, or changes or stops its repeat (repeat null). Fails with not_scheduled once it left the scheduled state.',
    },
    input: t.Object(
      {
        scheduled_at: t.Optional(Timestamp('the new time of a scheduled send')),
        repeat: t.Optional(
          t.Union([t.Object({ every_minutes: t.Integer({ minimum: 1, maximum: 525_600 }) }), t.Null()], {
            description: 'a new interval, or null to stop repeating',
          }),
        ),
      },
      // REST refuses an empty body by its schema; an MCP tool's arguments are checked below
      { minProperties: 1 },
    ),
    output: SentEmail,
    handle: ({ ctx, auth }, { id, ...patch }) => {
      if (patch.scheduled_at === undefined && patch.repeat === undefined) throw errors.validation('scheduled_at', 'give scheduled_at, repeat or both')
      // Elysia's t.Integer also takes a numeric string (and REST converts it, within bounds); a tool's argument must be the number
      if (patch.repeat && typeof patch.repeat.every_minutes !== 'number') throw errors.validation('repeat', 'must be an object or null')
      return updateSend(ctx, auth.orgId, id, patch)
    },
  }),
  operation({
    name: 'cancel_scheduled_email',
    method: 'POST',
    path: '/v1/sent-emails/:id/cancel',
    tag: TAG,
    summary: 'Cancel a scheduled send, or stop a repeat',
    description: '409 not_scheduled when there is nothing left to cancel.',
    params: Id('the scheduled or repeating send'),
    resource: 'send',
    mcp: {
      description: 'Cancels a scheduled send, or stops a repeating one. Fails with not_scheduled when nothing is left to cancel.',
      hints: { destructiveHint: true },
    },
    output: SentEmail,
    handle: ({ ctx, auth }, { id }) => cancelSend(ctx, auth.orgId, id),
  }),
  operation({
    name: 'stop_repeat_as_recipient',
    method: 'POST',
    path: '/v1/emails/:id/repeat-stop',
    tag: 'Emails',
    summary: 'Stop a repeating send you received a tick of',
    description: 'The tick must be DKIM-authenticated by the sender.',
    params: Id(),
    resource: 'email',
    mcp: false,
    output: t.Object({ repeat_id: t.String({ format: 'uuid' }), stopped: t.Boolean() }),
    handle: ({ ctx, auth }, { id }) => stopRepeatAsRecipient(ctx, auth.orgId, id),
  }),
  operation({
    name: 'get_outbound_status',
    method: 'GET',
    path: '/v1/outbound/status',
    tag: TAG,
    summary: 'Verified outbound senders',
    description: 'Send from a managed inbox, or from any address at a verified domain.',
    mcp: false,
    output: t.Object({
      relay: t.String({ description: 'smtp (SMTP_RELAY_URL) or local' }),
      verified_domains: t.Array(t.String()),
      managed_inboxes: t.Array(t.String()),
    }),
    handle: async ({ ctx, auth }) => {
      const senders = await validSenders(ctx.sql, auth.orgId)
      return { relay: relayOf(ctx).kind, verified_domains: senders.domains, managed_inboxes: senders.inboxes }
    },
  }),
]
