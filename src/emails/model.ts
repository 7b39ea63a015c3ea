/** Received and sent mail as the API returns it: the email, its summary in lists, the thread. */
import { t } from 'elysia'

/** Long-polls longer than this are cut short; clients simply poll again. */
export const MAX_WAIT_SECONDS = 60

const LABELS =
  'sorted: system labels (inbound and unread on arrival, read once marked, sent on a sent copy) and custom ones the organization created (GET /v1/labels)'

export const Address = t.Object({ address: t.String(), name: t.String() })

export const Summary = t.Object({
  id: t.String({ format: 'uuid' }),
  thread_id: t.String({ format: 'uuid' }),
  direction: t.Union([t.Literal('inbound'), t.Literal('outbound')]),
  event_type: t.String({
    description:
      "inbound: email.received, or email.bounced / email.tls_report / email.dmarc_report / email.dmarc_failure for machine mail; outbound (the sender's copy): email.sent, or email.replied for an answer (in_reply_to_email_id)",
  }),
  from: t.Union([Address, t.Null()]),
  to: t.Array(Address),
  cc: t.Array(Address),
  subject: t.String(),
  received_at: t.String({ format: 'date-time' }),
  size_bytes: t.Integer(),
  attachment_count: t.Integer(),
  content_discarded: t.Boolean(),
  labels: t.Array(t.String(), { description: LABELS }),
})

export const EXTRACTED_TEXT =
  'the new content of a received message: its text without the quoted earlier messages, the "On … wrote:" line (or From:/Sent: block) and a trailing signature ' +
  "(a forward keeps the forwarded message); '' when it is all quote; null for sent mail, mail stored before extraction existed, or discarded content"
export const EXTRACTED_HTML = 'the HTML body without its quotes and signature, as extracted_text; null when the message has no HTML body'

/** The reply without its quotes (mail/inbound/extract.ts), on a message and, when asked for, in the list. */
const ExtractedFields = {
  extracted_text: t.Union([t.String(), t.Null()], { description: EXTRACTED_TEXT }),
  extracted_html: t.Union([t.String(), t.Null()], { description: EXTRACTED_HTML }),
}

/** An item of GET /v1/emails: a summary, with the new content when include_extracted=true. */
export const ListedEmail = t.Composite([
  Summary,
  t.Object({
    extracted_text: t.Optional(ExtractedFields.extracted_text),
    extracted_html: t.Optional(ExtractedFields.extracted_html),
  }),
])

export const Verdict = t.Object({ result: t.String() }, { additionalProperties: true })

export const Email = t.Composite([
  Summary,
  t.Object({
    message_id: t.Union([t.String(), t.Null()]),
    in_reply_to: t.Union([t.String(), t.Null()]),
    references: t.Array(t.String()),
    reply_to: t.Array(Address),
    sent_at: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'the Date header' }),
    text: t.Union([t.String(), t.Null()]),
    html: t.Union([t.String(), t.Null()]),
    ...ExtractedFields,
    headers: t.Array(t.Object({ name: t.String(), value: t.String() })),
    attachments: t.Array(
      t.Object({
        index: t.Integer(),
        filename: t.Union([t.String(), t.Null()]),
        content_type: t.String(),
        size_bytes: t.Integer(),
        content_id: t.Union([t.String(), t.Null()]),
        disposition: t.Union([t.String(), t.Null()]),
      }),
    ),
    authentication: t.Object(
      { spf: Verdict, dkim: t.Array(Verdict), dmarc: Verdict, arc: Verdict },
      { description: 'mailauth verdicts; only `pass` means authenticated' },
    ),
    envelope: t.Object({
      mail_from: t.Union([t.String(), t.Null()]),
      rcpt_to: t.Array(t.String()),
      remote_ip: t.Union([t.String(), t.Null()]),
      helo: t.Union([t.String(), t.Null()]),
      tls: t.Boolean(),
    }),
    content_discarded_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  }),
])

export const Thread = t.Object({
  id: t.String({ format: 'uuid' }),
  subject: t.String(),
  participants: t.Array(t.String()),
  message_count: t.Integer(),
  last_message_at: t.String({ format: 'date-time' }),
  created_at: t.String({ format: 'date-time' }),
  labels: t.Array(t.String(), { description: "the union of its messages' labels, sorted" }),
})
