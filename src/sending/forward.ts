/**
 * Forwarding a stored email (POST /v1/emails/{id}/forward, the MCP tool forward_email) to new
 * recipients, in one of two forms:
 *
 * - `inline`: the sender's note, then the original message quoted with its headers, and its
 *   attachments (none once its content was discarded);
 * - `attachment`: the sender's note, with the original message whole (its bytes as stored,
 *   attachments included) attached as `message/rfc822`.
 *
 * Either way the forward is stored in the original's thread, and its References name the
 * original, so the forwarding inbox keeps the conversation together.
 */
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { getEmail, rawMessage } from '../mail/email-queries'
import { attachmentContents } from '../mail/inbound/parse'
import type { SendMailRequest } from './model'

export const FORWARD_MODES = ['inline', 'attachment'] as const
export type ForwardMode = (typeof FORWARD_MODES)[number]

/** The thread a send joins, and the Message-IDs its References carry. */
export interface SendThread {
  id: string
  references: string[]
}

export interface Forward {
  content: Pick<SendMailRequest, 'subject' | 'body_text' | 'attachments'>
  thread: SendThread
}

/** A file name made of `text`: no characters a filename parameter may not carry, at most 200 of them. */
const fileName = (text: string) => text.replace(/[\r\n"\\/]/g, '_').slice(0, 200)

/** The subject, text and attachments of a forward of `emailId`, and the thread it joins. */
export async function forwardedMessage(ctx: AppContext, auth: Auth, emailId: string, note: string | undefined, mode: ForwardMode = 'inline'): Promise<Forward> {
  const original = await getEmail(ctx.sql, auth.orgId, emailId, auth.boundAddress)
  const subject = /^fwd?:/i.test(original.subject) ? original.subject : `Fwd: ${original.subject}`
  const thread = { id: original.thread_id, references: [...original.references, ...(original.message_id ? [original.message_id] : [])] }
  if (mode === 'attachment') {
    const raw = await rawMessage(ctx.sql, auth.orgId, emailId)
    const attachment = {
      filename: `${fileName(original.subject.trim() || 'message')}.eml`,
      content_type: 'message/rfc822',
      content: Buffer.from(raw).toString('base64'),
    }
    return { content: { subject, body_text: note ?? '', attachments: [attachment] }, thread }
  }
  const files = original.content_discarded_at ? [] : await attachmentContents(await rawMessage(ctx.sql, auth.orgId, emailId))
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
  const content = {
    subject,
    body_text: note ? `${note}\n\n${quoted}` : quoted,
    ...(files.length && {
      attachments: files.map((f, i) => ({
        filename: fileName(f.filename ?? `attachment-${i}`),
        content_type: f.contentType,
        content: Buffer.from(f.content).toString('base64'),
      })),
    }),
  }
  return { content, thread }
}
