/**
 * The machine-readable part of a report about mail we sent: a delivery status notification
 * (RFC 3464, `multipart/report; report-type=delivery-status`) or an abuse report (ARF, RFC 5965,
 * `report-type=feedback-report`), with the headers of the original message it returns (its
 * `message/rfc822` or `text/rfc822-headers` part). Only the fields needed to find the original
 * send are read; everything else of the report stays in the stored message.
 */
import PostalMime from 'postal-mime'
import { messageIds } from './parse'

/** One recipient's block of a DSN. */
export interface RecipientStatus {
  /** Final-Recipient, else Original-Recipient: the address the report is about, lowercased */
  address: string
  /** Original-Recipient, lowercased, when given */
  original: string | null
  /** failed, delayed, delivered, relayed or expanded */
  action: string
  /** the RFC 3463 status, e.g. 5.1.1 */
  status: string | null
  /** e.g. `smtp; 550 5.1.1 <x@example.com>: Recipient address rejected`, unfolded */
  diagnosticCode: string | null
}

/** What the report says of the message it returns. */
export interface OriginalMessage {
  messageId: string | null
  from: string | null
}

export type MailReport =
  | { kind: 'delivery-status'; recipients: RecipientStatus[]; original: OriginalMessage | null }
  | {
      kind: 'feedback-report'
      /** abuse, fraud, virus, other, not-spam; auth-failure is a DMARC failure report (RFC 6591) */
      feedbackType: string
      /** Original-Rcpt-To, lowercased: the complaining recipient, when the reporter tells */
      recipients: string[]
      original: OriginalMessage | null
    }

const REPORT = /^multipart\/report\b/
const reportType = (contentType: string) => /report-type="?([\w-]+)"?/i.exec(contentType)?.[1]?.toLowerCase() ?? null

/** Is this message a report whose parts `parseReport` reads? */
export const isReport = (contentType: string) => REPORT.test(contentType) && ['delivery-status', 'feedback-report'].includes(reportType(contentType) ?? '')

/**
 * Header fields (RFC 5322 syntax, also that of a DSN's blocks): unfolded, names lowercased, in
 * blocks separated by blank lines. A DSN has a per-message block, then one per recipient.
 */
function fieldBlocks(text: string): Map<string, string>[] {
  const blocks: Map<string, string>[] = []
  let block = new Map<string, string>()
  let last: string | null = null
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    if (!line.trim()) {
      if (block.size) blocks.push(block)
      block = new Map()
      last = null
    } else if (/^[ \t]/.test(line) && last) {
      block.set(last, `${block.get(last)} ${line.trim()}`)
    } else {
      const colon = line.indexOf(':')
      if (colon <= 0) continue
      last = line.slice(0, colon).trim().toLowerCase()
      // the first of a repeated field wins (a report has each once)
      if (!block.has(last)) block.set(last, line.slice(colon + 1).trim())
    }
  }
  if (block.size) blocks.push(block)
  return blocks
}

/** `rfc822; Nobody@Example.com` → `nobody@example.com` (the address type is RFC 3464's; only rfc822 is mail). */
function typedAddress(value: string | undefined): string | null {
  if (!value) return null
  const semi = value.indexOf(';')
  const type = semi >= 0 ? value.slice(0, semi).trim().toLowerCase() : 'rfc822'
  if (type !== 'rfc822' && type !== 'utf-8') return null
  const address = (semi >= 0 ? value.slice(semi + 1) : value).trim().replace(/^<|>$/g, '')
  return address.includes('@') ? address.toLowerCase() : null
}

const plainAddress = (value: string | undefined) => {
  const m = value ? /<([^<>\s]+@[^<>\s]+)>|([^\s<>,;]+@[^\s<>,;]+)/.exec(value) : null
  return (m?.[1] ?? m?.[2])?.toLowerCase() ?? null
}

function recipientStatus(block: Map<string, string>): RecipientStatus | null {
  const original = typedAddress(block.get('original-recipient'))
  const address = typedAddress(block.get('final-recipient')) ?? original
  const action = block.get('action')?.toLowerCase().split(/\s/)[0]
  if (!address || !action) return null
  const status = /^([245])\.\d{1,3}\.\d{1,3}/.exec(block.get('status') ?? '')?.[0] ?? null
  return { address, original, action, status, diagnosticCode: block.get('diagnostic-code') ?? null }
}

function originalOf(headers: string | undefined): OriginalMessage | null {
  if (headers === undefined) return null
  const [fields] = fieldBlocks(headers.split(/\r?\n\r?\n/)[0] ?? '')
  if (!fields) return null
  return { messageId: messageIds(fields.get('message-id'))[0] ?? null, from: plainAddress(fields.get('from')) }
}

/**
 * The report of a message whose top-level type `isReport`, or null when its report part is
 * missing or says nothing usable.
 */
export async function parseReport(raw: Uint8Array): Promise<MailReport | null> {
  const email = await PostalMime.parse(raw, { attachmentEncoding: 'utf8' })
  const contentType = email.headers.find(h => h.key === 'content-type')?.value ?? ''
  const part = (...types: string[]) => email.attachments.find(a => types.includes(a.mimeType.toLowerCase()))?.content as string | undefined
  const original = originalOf(part('message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers'))
  if (reportType(contentType) === 'delivery-status') {
    const status = part('message/delivery-status', 'message/global-delivery-status')
    if (status === undefined) return null
    const recipients = fieldBlocks(status)
      .slice(1)
      .map(recipientStatus)
      .filter((r): r is RecipientStatus => r !== null)
    return recipients.length ? { kind: 'delivery-status', recipients, original } : null
  }
  const feedback = part('message/feedback-report')
  if (feedback === undefined) return null
  const fields = new Map(fieldBlocks(feedback).flatMap(b => [...b]))
  const feedbackType = fields.get('feedback-type')?.toLowerCase().split(/\s/)[0]
  if (!feedbackType) return null
  // Original-Rcpt-To may repeat (one per recipient); fieldBlocks keeps the first, so read them all here
  const recipients = [...feedback.matchAll(/^original-rcpt-to:\s*(.+)$/gim)].map(m => plainAddress(m[1])).filter((a): a is string => a !== null)
  return { kind: 'feedback-report', feedbackType, recipients, original }
}
