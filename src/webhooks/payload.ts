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
        attachments: mail.attachments,
      },
      envelope: { mail_from: email.mailFrom, rcpt_to: email.rcptTo },
      authentication: email.auth,
    },
  }
}

export type EmailEvent = ReturnType<typeof emailEvent>

/** The body of one attempt: the stored event plus the attempt number and download URLs signed now. */
export function attemptBody(event: EmailEvent, attempt: number, publicUrl: string, keys: ServerKeys, orgId: string): string {
  return JSON.stringify({
    ...event,
    delivery: { attempt },
    email: { ...event.email, ...downloadUrls(publicUrl, keys, event.email.id, orgId) },
  })
}
