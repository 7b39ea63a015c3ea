/**
 * Reports that come back by mail, matched to the send they are about: a delivery status
 * notification (RFC 3464) or an abuse report (ARF, RFC 5965) received at an address of the
 * organization (the envelope sender of its sends) names the original message by its Message-ID
 * (in its message/rfc822 or text/rfc822-headers part) and the recipient (Final-Recipient /
 * Original-Recipient, or Original-Rcpt-To). Only a message this organization sent, to that
 * recipient, is matched: a report naming another organization's message changes nothing. A
 * consumer of the inbound store (src/plugins.ts), ahead of the webhooks, so the report's
 * email.bounced / email.complained event carries the send.
 */
import type { ReceivedMailConsumer } from '../mail/inbound/ingest'
import type { MailReport } from '../mail/inbound/report'
import type { StoredEmail } from '../mail/store'
import type { RecipientReport } from './model'
import { findSentMessage, type SentMessage } from './queries'
import { eventRecipients, recordReports, type ReportedRecipient } from './record'

/** Feedback types that are not a complaint about the mail (RFC 5965, RFC 6591). */
const NOT_COMPLAINTS = new Set(['not-spam', 'auth-failure'])

/** The recipients of the sent message that the report is about, with what it says of each. */
function reportedRecipients(report: MailReport, sent: SentMessage, email: StoredEmail): ReportedRecipient[] {
  const common = { email_id: sent.email_id, report_email_id: email.id, reported_at: email.receivedAt.toISOString() }
  const ours = (address: string | null) => (address && sent.rcpt_to.includes(address) ? address : null)
  if (report.kind === 'delivery-status') {
    return report.recipients.flatMap(r => {
      // a success notice (delivered, relayed, expanded) is not a bounce; a status of class 2 neither
      if ((r.action !== 'failed' && r.action !== 'delayed') || !r.status || r.status.startsWith('2')) return []
      const address = ours(r.original) ?? ours(r.address)
      if (!address) return []
      const entry: RecipientReport = {
        status: 'bounced',
        bounce_type: r.status.startsWith('5') ? 'hard' : 'soft',
        status_code: r.status,
        diagnostic_code: r.diagnosticCode,
        feedback_type: null,
        source: 'dsn',
        ...common,
      }
      return [{ address, report: entry }]
    })
  }
  if (NOT_COMPLAINTS.has(report.feedbackType)) return []
  // a reporter that redacts the recipient leaves it to the message: a message to one recipient names it
  const named = report.recipients.map(ours).filter((a): a is string => a !== null)
  const addresses = named.length ? named : sent.rcpt_to.length === 1 ? sent.rcpt_to : []
  return addresses.map(address => ({
    address,
    report: {
      status: 'complained',
      bounce_type: null,
      status_code: null,
      diagnostic_code: null,
      feedback_type: report.feedbackType,
      source: 'arf',
      ...common,
    } satisfies RecipientReport,
  }))
}

export const bounceReports: ReceivedMailConsumer = () => async (tx, email, _mail, copy) => {
  const messageId = copy.report?.original?.messageId
  if (!copy.report || !messageId || (email.eventType !== 'email.bounced' && email.eventType !== 'email.complained')) return
  const sent = await findSentMessage(tx, email.orgId, messageId)
  if (!sent) return
  const reported = reportedRecipients(copy.report, sent, email)
  if (!reported.length) return
  copy.eventFields.send_id = sent.send_id
  copy.eventFields[email.eventType === 'email.bounced' ? 'bounce' : 'complaint'] = {
    send_id: sent.send_id,
    email_id: sent.email_id,
    source: reported[0]!.report.source,
    recipients: eventRecipients(reported),
  }
  return recordReports(tx, { orgId: email.orgId, sendId: sent.send_id, from: sent.from_address }, reported)
}
