/**
 * Forwarding a stored email (the MCP tool forward_email): the sender's note, then the original
 * message quoted with its headers, and its attachments (none once its content was discarded).
 */
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { getEmail, rawMessage } from '../mail/email-queries'
import { attachmentContents } from '../mail/inbound/parse'
import type { SendMailRequest } from './model'

/** The subject, text and attachments of a forward of `emailId`. */
export async function forwardedMessage(
  ctx: AppContext,
  auth: Auth,
  emailId: string,
  note: string | undefined,
): Promise<Pick<SendMailRequest, 'subject' | 'body_text' | 'attachments'>> {
  const original = await getEmail(ctx.sql, auth.orgId, emailId, auth.boundAddress)
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
  return {
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
}
