/**
 * The suppression_list gate of a send: a recipient on the organization's suppression list is
 * refused (403 recipient_not_allowed, one entry of `error.gates[]` per address, naming the
 * address and why it is listed) until the caller deletes it from the list.
 */
import type { Tx } from '../db/client'
import { docsPath, errors, type Gate } from '../errors'
import type { SuppressionReason } from './recipient-reports'
import { type Suppressed, suppressedAmong } from './report-queries'

const GATE = 'suppression_list'
const DOCS = docsPath('suppressions')

const REASONS: Record<SuppressionReason, { reason: string; message: (s: Suppressed) => string }> = {
  hard_bounce: { reason: 'recipient_hard_bounced', message: s => `${s.address} hard-bounced${s.detail ? ` (${s.detail})` : ''}` },
  complaint: { reason: 'recipient_complained', message: s => `${s.address} reported mail from this organization as ${s.detail ?? 'abuse'}` },
  manual: { reason: 'recipient_suppressed', message: s => `${s.address} was added to the suppression list${s.detail ? `: ${s.detail}` : ''}` },
}

/** The addresses among `addresses` on the organization's list, lowercased. */
export const suppressedOf = async (tx: Tx, orgId: string, addresses: string[]) =>
  (await suppressedAmong(tx, orgId, [...new Set(addresses.map(a => a.toLowerCase()))])).map(s => s.address)

/**
 * Throws 403 recipient_not_allowed when a recipient is on the list. `read`: the entries already
 * read for the addresses in `checked` (suppressedColumn); the others are looked up here.
 */
export async function enforceNotSuppressed(
  tx: Tx,
  orgId: string,
  recipients: string[],
  read: { checked: string[]; suppressed: Suppressed[] } = { checked: [], suppressed: [] },
): Promise<void> {
  const addresses = [...new Set(recipients.map(r => r.toLowerCase()))]
  const checked = new Set(read.checked.map(a => a.toLowerCase()))
  const unread = addresses.filter(a => !checked.has(a))
  const found = [...read.suppressed, ...(unread.length ? await suppressedAmong(tx, orgId, unread) : [])].filter(s => addresses.includes(s.address))
  if (!found.length) return
  const gates: Gate[] = found.map(s => ({
    name: GATE,
    reason: REASONS[s.reason].reason,
    message: REASONS[s.reason].message(s),
    subject: s.address,
    fix: { action: 'delete_suppression', subject: s.address },
    docs_url: DOCS,
  }))
  throw errors.recipientsRefused(`to: ${gates.length} recipient(s) on the suppression list; DELETE /v1/suppressions/{address} to send to them again`, gates)
}
