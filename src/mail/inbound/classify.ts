/**
 * Machine mail gets its own event type, so webhooks can subscribe to (or ignore) bounces and
 * reports: delivery status notifications (RFC 3464), abuse reports (ARF, RFC 5965), TLS reports
 * (RFC 8460), DMARC aggregate reports (RFC 7489 section 7.2) and DMARC failure reports (ARF,
 * RFC 6591).
 */
import type { ParsedMail } from './parse'
import type { MailReport } from './report'

export const EMAIL_EVENT_TYPES = [
  'email.received',
  'email.bounced',
  'email.complained',
  'email.tls_report',
  'email.dmarc_report',
  'email.dmarc_failure',
] as const
export type EmailEventType = (typeof EMAIL_EVENT_TYPES)[number]

const reportType = (contentType: string) => (/^multipart\/report\b/.test(contentType) ? (/report-type="?([\w-]+)"?/.exec(contentType)?.[1] ?? '') : null)

/** `parsed`: the message's report part, read when it is one (report.ts); an ARF report is a complaint unless it reports an authentication failure. */
export function classify(mail: ParsedMail, mailFrom: string, parsed: MailReport | null = null): EmailEventType {
  const report = reportType(mail.contentType)
  if (report === 'delivery-status') return 'email.bounced'
  if (report === 'tlsrpt') return 'email.tls_report'
  if (report === 'feedback-report') {
    return parsed?.kind === 'feedback-report' && parsed.feedbackType !== 'auth-failure' ? 'email.complained' : 'email.dmarc_failure'
  }
  const types = mail.attachments.map(a => a.content_type.toLowerCase())
  if (types.some(t => t.startsWith('application/tlsrpt'))) return 'email.tls_report'
  const aggregateAttachment = types.some(t => /^(application\/(zip|gzip|x-gzip|xml)|text\/xml)/.test(t))
  if (aggregateAttachment && /\breport[ -]domain\s*:/i.test(mail.subject)) return 'email.dmarc_report'
  // A null reverse-path with a failure-notice subject is a bounce from an MTA that skipped DSN.
  if (mailFrom === '' && /(undeliver|delivery (status|failure)|returned mail|failure notice)/i.test(mail.subject)) return 'email.bounced'
  return 'email.received'
}
