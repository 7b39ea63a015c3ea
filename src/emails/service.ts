/** Mail as the API shows it: messages, their summaries and threads (the statements are mail/email-queries.ts). */
import type { Sql } from '../db/client'
import { iso } from '../http/timestamps'
import { type EmailRow, type ExtractedRow, findThread, type SummaryRow, type ThreadRow } from '../mail/email-queries'

export const presentSummary = (r: SummaryRow) => ({
  id: r.id,
  thread_id: r.thread_id,
  direction: r.direction,
  event_type: r.event_type,
  from: r.from_address ? { address: r.from_address, name: r.from_name ?? '' } : null,
  to: r.to_addresses,
  cc: r.cc_addresses,
  subject: r.subject,
  received_at: iso(r.received_at)!,
  size_bytes: r.size_bytes,
  attachment_count: r.attachments.length,
  content_discarded: r.content_discarded_at !== null,
  labels: r.labels,
})

/** A list's item: the summary, with the new content when the list read it (`listEmails`' `extracted`). */
export const presentListed = (r: SummaryRow & Partial<ExtractedRow>) =>
  r.extracted_text === undefined ? presentSummary(r) : { ...presentSummary(r), extracted_text: r.extracted_text, extracted_html: r.extracted_html ?? null }

export const presentEmail = (r: EmailRow) => ({
  ...presentSummary(r),
  message_id: r.message_id,
  in_reply_to: r.in_reply_to,
  references: r.references,
  reply_to: r.reply_to,
  sent_at: iso(r.sent_at),
  text: r.text_body,
  html: r.html_body,
  extracted_text: r.extracted_text,
  extracted_html: r.extracted_html,
  headers: r.headers,
  attachments: r.attachments,
  authentication: r.auth,
  envelope: { mail_from: r.mail_from, rcpt_to: r.rcpt_to, remote_ip: r.remote_ip, helo: r.helo, tls: r.tls },
  content_discarded_at: iso(r.content_discarded_at),
})

export const presentThread = (t: ThreadRow) => ({
  id: t.id,
  subject: t.subject,
  participants: t.participants,
  message_count: t.message_count,
  last_message_at: iso(t.last_message_at)!,
  created_at: iso(t.created_at)!,
  labels: t.labels,
})

/** A thread of the organization with its messages; not_found for any other. */
export async function getThread(sql: Sql, orgId: string, id: string) {
  const { thread, emails } = await findThread(sql, orgId, id)
  return { ...presentThread(thread), emails: emails.map(presentSummary) }
}
