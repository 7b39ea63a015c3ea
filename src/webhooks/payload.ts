/**
 * The event a webhook receives for inbound mail. The stored part is built once, when the
 * delivery is created, so retries and replays send the same content under the same event id;
 * what changes per attempt (`delivery.attempt`, fresh signed download URLs) is added at send
 * time.
 */
import type { StoredEmail } from '../mail/store'
import type { ParsedMail } from '../mail/inbound/parse'
import { downloadUrls } from '../emails/download-token'
import type { ServerKeys } from '../crypto'
import { t } from 'elysia'
import type { TSchema } from '@sinclair/typebox'
import { Nullable } from '../http/schema'
import { EXTRACTED_HTML, EXTRACTED_TEXT } from '../emails/model'

export function emailEvent(eventId: string, email: StoredEmail, mail: ParsedMail) {
  const header = (name: string) => mail.headers.find(h => h.name === name)?.value ?? null
  return {
    event: email.eventType,
    id: eventId,
    created_at: email.receivedAt.toISOString(),
    email: {
      id: email.id,
      thread_id: email.threadId,
      received_at: email.receivedAt.toISOString(),
      size_bytes: email.sizeBytes,
      headers: {
        from: header('from'),
        to: header('to'),
        cc: header('cc'),
        reply_to: header('reply-to'),
        subject: mail.subject,
        date: mail.date?.toISOString() ?? null,
        message_id: mail.messageId,
        in_reply_to: mail.inReplyTo,
        references: mail.references,
      },
      parsed: {
        from: mail.from,
        to: mail.to,
        cc: mail.cc,
        reply_to: mail.replyTo,
        body_text: mail.text,
        body_html: mail.html,
        extracted_text: email.extracted.text,
        extracted_html: email.extracted.html,
        attachments: mail.attachments,
      },
      envelope: { mail_from: email.mailFrom, rcpt_to: email.rcptTo },
      authentication: email.auth,
    },
  }
}

export type EmailEvent = ReturnType<typeof emailEvent>

/**
 * The body of one attempt: the stored event plus the attempt number and, for an email event,
 * download URLs signed now. Events without an email (payment events) are sent as stored.
 */
export function attemptBody(event: EmailEvent | { email?: undefined }, attempt: number, publicUrl: string, keys: ServerKeys, orgId: string): string {
  if (!event.email) return JSON.stringify({ ...event, delivery: { attempt } })
  return JSON.stringify({
    ...event,
    delivery: { attempt },
    email: { ...event.email, ...downloadUrls(publicUrl, keys, event.email.id, orgId) },
  })
}

const Str = t.String()
const NullStr = Nullable(t.String())
const Mailbox = t.Object({ address: t.String(), name: t.String() })

/** What a bounce or a complaint event says of the send it is about (src/bounces/). */
const SendReport = (what: string, recipient: TSchema) =>
  t.Optional(
    t.Object(
      {
        send_id: t.String({ format: 'uuid' }),
        email_id: Nullable(t.String({ format: 'uuid', description: 'the sent message it is about' })),
        source: t.String({ description: 'dsn (a delivery status notification), relay (the relay refused it at delivery), arf (an abuse report)' }),
        recipients: t.Array(recipient),
      },
      { description: `${what}: present when the report was matched to a send of the organization (by the original Message-ID and recipient)` },
    ),
  )

/** The documented shape of an email event, published as `webhooks` in the OpenAPI document. */
export const EmailEventSchema = t.Object(
  {
    event: t.String({ description: 'email.received, or email.bounced / email.complained / email.tls_report / email.dmarc_report / email.dmarc_failure' }),
    id: t.String({ description: 'event id (evt_...): identical across retries and replays; dedupe on it' }),
    created_at: t.String({ format: 'date-time' }),
    delivery: t.Object({ attempt: t.Integer({ description: '1 for the first attempt; replays continue the count' }) }),
    send_id: t.Optional(t.String({ format: 'uuid', description: 'email.bounced / email.complained matched to a send: the send' })),
    bounce: SendReport(
      'email.bounced',
      t.Object({
        address: Str,
        type: t.String({ description: 'hard (5.x.x: the address is suppressed) or soft (4.x.x)' }),
        status_code: NullStr,
        diagnostic_code: NullStr,
      }),
    ),
    complaint: SendReport('email.complained', t.Object({ address: Str, feedback_type: NullStr })),
    email: Nullable(
      t.Object({
        id: t.String({ format: 'uuid' }),
        thread_id: t.String({ format: 'uuid' }),
        received_at: t.String({ format: 'date-time' }),
        size_bytes: t.Integer(),
        headers: t.Object({
          from: NullStr,
          to: NullStr,
          cc: NullStr,
          reply_to: NullStr,
          subject: Str,
          date: Nullable(t.String({ format: 'date-time' })),
          message_id: NullStr,
          in_reply_to: NullStr,
          references: t.Array(Str),
        }),
        parsed: t.Object({
          from: Nullable(Mailbox),
          to: t.Array(Mailbox),
          cc: t.Array(Mailbox),
          reply_to: t.Array(Mailbox),
          body_text: NullStr,
          body_html: NullStr,
          extracted_text: Nullable(t.String({ description: EXTRACTED_TEXT })),
          extracted_html: Nullable(t.String({ description: EXTRACTED_HTML })),
          attachments: t.Array(
            t.Object({ index: t.Integer(), filename: NullStr, content_type: Str, size_bytes: t.Integer(), content_id: NullStr, disposition: NullStr }),
          ),
        }),
        envelope: t.Object({ mail_from: t.String({ description: "'' for a bounce" }), rcpt_to: t.Array(Str) }),
        authentication: t.Object(
          {
            spf: t.Object({ result: Str }),
            dkim: t.Array(t.Object({ result: Str, domain: Str })),
            dmarc: t.Object({ result: Str }),
            arc: t.Object({ result: Str }),
          },
          { description: 'only `pass` means authenticated' },
        ),
        raw_url: t.String({ description: 'the exact message; the token parameter is valid 24 hours' }),
        attachments_url: t.String({ description: 'a tar.gz of the attachments; the token parameter is valid 24 hours' }),
      }),
      {
        description: 'the received message; null only for an email.bounced of bounce.source relay (the relay refused the recipient, so no report mail exists)',
      },
    ),
  },
  {
    description:
      'POSTed as JSON. Headers: Service-Signature and Legacy-Signature `t=<unix>,v1=<hex>` (HMAC-SHA256 of `<t>.<raw body>` keyed by the webhook secret as UTF-8; one v1 per valid secret during a rotation); Standard Webhooks webhook-id, webhook-timestamp, webhook-signature. Reject when |now - t| > 300 s. Answer 2xx to accept; echo the event id in Service-Delivery-Confirmed to mark it header_confirmed.',
  },
)
