/**
 * The send-mail request and response. Header values are single lines: a CR or LF anywhere in
 * an address, the subject, a file name or a custom header is a validation_error, so header
 * injection cannot happen.
 */
import { t, type Static } from 'elysia'
import { Address, Nullable, OneOf } from '../http/schema'
import { Timestamp } from '../http/timestamps'
import { TemplateRef } from '../templates/model'
import { SendRecipient, type RecipientReport } from './recipient-reports'

const SINGLE_LINE = '^[^\\r\\n]*$'
const Addresses = (max: number, description: string) => t.Array(Address, { minItems: 1, maxItems: max, description })

/** Custom headers a sender may set; everything else is ours to write. */
export const CUSTOM_HEADER = '^(X-[A-Za-z0-9-]+|List-Unsubscribe|List-Unsubscribe-Post|List-Id|Auto-Submitted|Precedence|Keywords|Comments)$'

/** 10 MB of attachments take 13.4 MB in base64, plus the bodies and the JSON around them. */
export const SEND_MAIL_MAX_BODY_BYTES = 16 * 1024 * 1024

export const SendMailBody = t.Object({
  from: Address,
  from_name: t.Optional(t.String({ maxLength: 200, pattern: SINGLE_LINE, description: 'display name for From' })),
  to: t.Optional(
    t.Union([Address, Addresses(50, 'one or more recipients')], { description: 'required, unless in_reply_to_email_id names the message to answer' }),
  ),
  cc: t.Optional(Addresses(50, 'carbon-copy recipients')),
  bcc: t.Optional(Addresses(50, 'blind recipients: in the envelope, never in the headers')),
  reply_to: t.Optional(t.Union([Address, Addresses(10, 'Reply-To addresses')])),
  subject: t.Optional(t.String({ maxLength: 998, pattern: SINGLE_LINE, description: 'a single line; required unless template is given' })),
  body_text: t.Optional(t.String({ maxLength: 5_000_000, description: 'required unless template is given' })),
  body_html: t.Optional(t.String({ maxLength: 5_000_000 })),
  template: t.Optional(TemplateRef),
  attachments: t.Optional(
    t.Array(
      t.Object({
        filename: t.String({ minLength: 1, maxLength: 255, pattern: '^[^\\r\\n"\\\\/]*$' }),
        content_type: t.String({ pattern: '^[a-zA-Z0-9!#$&^_.+-]+/[a-zA-Z0-9!#$&^_.+-]+$', maxLength: 127, default: 'application/octet-stream' }),
        content: t.String({ pattern: '^[A-Za-z0-9+/=\\s]*$', description: 'base64' }),
      }),
      { maxItems: 20, description: 'at most 20 files, 10 MB in total' },
    ),
  ),
  headers: t.Optional(
    t.Record(t.String({ pattern: CUSTOM_HEADER }), t.String({ maxLength: 998, pattern: SINGLE_LINE }), {
      additionalProperties: false,
      description: `custom headers; names must match ${CUSTOM_HEADER}`,
    }),
  ),
  in_reply_to_email_id: t.Optional(
    t.String({ format: 'uuid', description: 'reply to this stored email: sets In-Reply-To and References, keeps the thread, and defaults to, subject' }),
  ),
  scheduled_at: t.Optional(Timestamp('send at this instant instead of now')),
  repeat: t.Optional(
    t.Object({ every_minutes: t.Integer({ minimum: 1, maximum: 525_600 }) }, { description: 'send now, then again every every_minutes in the same thread' }),
  ),
})
export type SendMailRequest = Static<typeof SendMailBody>

export const SendResponse = t.Object({
  id: t.String({ format: 'uuid' }),
  status: t.String({
    description:
      'queued (accepted by the relay; with Prefer: respond-async, HTTP 202: accepted for delivery, the relay not asked yet), scheduled, or pending_approval (HTTP 202: the sender requires approval, nothing was sent; id and draft_id name the draft, GET /v1/drafts/{id})',
  }),
  from: t.String(),
  accepted: t.Array(t.String()),
  rejected: t.Array(t.String()),
  idempotent_replay: t.Boolean(),
  scheduled_at: t.Optional(Nullable(t.String({ format: 'date-time' }))),
  thread_id: t.Optional(Nullable(t.String({ format: 'uuid' }))),
  draft_id: t.Optional(t.String({ format: 'uuid', description: 'pending_approval only: the draft that waits for approval' })),
})

export const DemoSendResponse = t.Composite([SendResponse, t.Object({ demo: t.Literal(true) })])

export const SEND_STATES = ['sending', 'queued', 'scheduled', 'executing', 'executed', 'failed', 'canceled'] as const

export const SentEmail = t.Object({
  id: t.String({ format: 'uuid' }),
  status: OneOf(SEND_STATES),
  from: t.String(),
  to: t.Array(t.String()),
  cc: t.Array(t.String()),
  bcc: t.Array(t.String()),
  subject: t.String(),
  scheduled_at: Nullable(t.String({ format: 'date-time' })),
  email_id: Nullable(t.String({ format: 'uuid' }), { description: 'the stored outbound message of the last execution' }),
  thread_id: Nullable(t.String({ format: 'uuid' })),
  accepted: t.Array(t.String()),
  rejected: t.Array(t.String()),
  recipients: t.Array(SendRecipient, {
    description: 'each recipient (to, cc, bcc) with what became of it: pending, accepted or rejected by the relay, then bounced (hard or soft) or complained',
  }),
  relay_response: Nullable(t.String({ description: "the relay's answer" })),
  error: Nullable(t.Object({ code: t.String(), message: t.String() })),
  repeat: Nullable(
    t.Object({
      every_minutes: t.Integer(),
      ticks: t.Integer(),
      next_at: Nullable(t.String({ format: 'date-time' })),
      stopped_at: Nullable(t.String({ format: 'date-time' })),
      stopped_by: Nullable(t.String()),
    }),
  ),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

/** A send as stored (the `sends` table). */
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
  /** bounces and complaints by lowercased recipient (src/bounces/) */
  recipient_reports: Record<string, RecipientReport>
  relay_response: string | null
  error_code: string | null
  error_message: string | null
  created_at: Date
  updated_at: Date
}

/** The request as executed: recipients as arrays, a template rendered, reply context resolved. */
export type NormalizedRequest = Omit<SendMailRequest, 'to' | 'reply_to' | 'subject' | 'body_text' | 'template'> & {
  subject: string
  body_text: string
  to: string[]
  reply_to?: string[]
  reply?: { in_reply_to?: string; references: string[] }
}
