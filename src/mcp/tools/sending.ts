/**
 * Sending tools: send, reply and forward, each requiring an idempotency key (the REST
 * Idempotency-Key, in the same scope: a model's retry returns the first result and never sends
 * twice). Three tools of one REST operation (POST /v1/send-mail), so written by hand; the
 * scheduled-send tools are declared with their routes (sending/operations.ts).
 */
import { Type } from '@sinclair/typebox'
import { getEmail, rawMessage } from '../../emails/service'
import { attachmentContents } from '../../mail/inbound/parse'
import { Address } from '../../http/schema'
import { SendMailBody, SendResponse } from '../../sending/model'
import { sendMail } from '../../sending/service'
import { tool, WRITE } from '../tool'

const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  description: 'required: any unique string for this send (a UUID). Calling again with the same key returns the first result and sends nothing',
})
const Uuid = (description: string) => Type.String({ format: 'uuid', description })
const Recipients = Type.Union([Address, Type.Array(Address, { minItems: 1, maxItems: 50 })], { description: 'one address or a list' })
const Scheduling = { scheduled_at: SendMailBody.properties.scheduled_at, repeat: SendMailBody.properties.repeat }
// A write that returns the same answer when repeated with its key: idempotent, and it reaches other people's mailboxes.
const SEND = { ...WRITE, idempotentHint: true, openWorldHint: true }

const { in_reply_to_email_id: _reply, to: _to, ...composeFields } = SendMailBody.properties

export const sendingTools = [
  tool({
    name: 'send_email',
    title: 'Send an email',
    description: 'Sends (or schedules, with scheduled_at) a new email from one of your addresses. Returns queued once the relay accepted it.',
    input: Type.Object({ ...composeFields, to: Recipients, idempotency_key: IdempotencyKey }),
    output: SendResponse,
    annotations: SEND,
    rest: { method: 'POST', path: '/v1/send-mail' },
    handle: async ({ ctx, auth }, { idempotency_key, ...body }) => (await sendMail(ctx, auth, body, idempotency_key)).data,
  }),
  tool({
    name: 'reply_to_email',
    title: 'Reply to an email',
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
      idempotency_key: IdempotencyKey,
    }),
    output: SendResponse,
    annotations: SEND,
    rest: { method: 'POST', path: '/v1/send-mail' },
    handle: async ({ ctx, auth }, { idempotency_key, email_id, subject, ...rest }) => {
      const original = await getEmail(ctx.sql, auth.orgId, email_id, auth.boundAddress)
      const reSubject = subject ?? (/^re:/i.test(original.subject) ? original.subject : `Re: ${original.subject}`)
      return (await sendMail(ctx, auth, { ...rest, subject: reSubject, in_reply_to_email_id: email_id }, idempotency_key)).data
    },
  }),
  tool({
    name: 'forward_email',
    title: 'Forward an email',
    description: 'Sends a stored email on to new recipients: your note, then the original message quoted, with its attachments.',
    input: Type.Object({
      email_id: Uuid('the email to forward'),
      from: Address,
      to: Recipients,
      note: Type.Optional(Type.String({ maxLength: 100_000, description: 'text above the forwarded message' })),
      ...Scheduling,
      idempotency_key: IdempotencyKey,
    }),
    output: SendResponse,
    annotations: SEND,
    rest: { method: 'POST', path: '/v1/send-mail' },
    handle: async ({ ctx, auth }, { idempotency_key, email_id, note, ...rest }) => {
      const original = await getEmail(ctx.sql, auth.orgId, email_id, auth.boundAddress)
      const files = original.content_discarded_at ? [] : await attachmentContents(await rawMessage(ctx.sql, auth.orgId, email_id))
      const from = original.from_address ? `${original.from_name ? `${original.from_name} ` : ''}<${original.from_address}>` : '(unknown)'
      const quoted = [
        '---------- Forwarded message ----------',
        `From: ${from}`,
        `Date: ${(original.sent_at ?? original.received_at).toUTCString()}`,
        `Subject: ${original.subject}`,
        `To: ${original.to_addresses.map(a => a.address).join(', ')}`,
        '',
        original.text_body ?? '',
      ].join('\n')
      const body = {
        ...rest,
        subject: /^fwd?:/i.test(original.subject) ? original.subject : `Fwd: ${original.subject}`,
        body_text: note ? `${note}\n\n${quoted}` : quoted,
        ...(files.length && {
          attachments: files.map((f, i) => ({
            filename: (f.filename ?? `attachment-${i}`).replace(/[\r\n"\\/]/g, '_'),
            content_type: f.contentType,
            content: Buffer.from(f.content).toString('base64'),
          })),
        }),
      }
      return (await sendMail(ctx, auth, body, idempotency_key)).data
    },
  }),
]
