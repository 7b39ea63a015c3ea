/**
 * What a bounce or a complaint does, whichever way it came (a report mail, the relay's refusal):
 * the recipient's status on the send, the address on the suppression list (hard bounces and
 * complaints; soft bounces never suppress), and the changes in the feed, in the caller's
 * transaction.
 */
import type { Tx } from '../db/client'
import type { ChangeInput } from '../changes/record'
import type { RecipientReport } from './model'
import { addSuppressions, recordRecipientReport, type SuppressionRow } from './queries'

export interface ReportedRecipient {
  /** lowercased */
  address: string
  report: RecipientReport
}

/** The part of a bounce or complaint event that says what happened to whom (`bounce` or `complaint` of an email.bounced / email.complained event). */
export const eventRecipients = (reported: ReportedRecipient[]) =>
  reported.map(({ address, report: r }) => ({
    address,
    ...(r.status === 'bounced' ? { type: r.bounce_type, status_code: r.status_code, diagnostic_code: r.diagnostic_code } : { feedback_type: r.feedback_type }),
  }))

const suppressing = (r: RecipientReport) => r.status === 'complained' || r.bounce_type === 'hard'

/** Records reports about recipients of one send of the organization; returns the changes to record with them. */
export async function recordReports(tx: Tx, send: { orgId: string; sendId: string; from: string }, reported: ReportedRecipient[]): Promise<ChangeInput[]> {
  const changes: ChangeInput[] = []
  for (const { address, report } of reported) {
    // a weaker report than the one recorded (a soft bounce after a hard one) changes nothing on the send
    if (!(await recordRecipientReport(tx, send.orgId, send.sendId, address, report))) continue
    changes.push({
      orgId: send.orgId,
      type: report.status === 'bounced' ? 'send.bounced' : 'send.complained',
      resource: { type: 'send', id: send.sendId },
      addresses: [send.from],
      data: { send_id: send.sendId, address, ...report },
    })
  }
  const added = await addSuppressions(
    tx,
    reported
      .filter(r => suppressing(r.report))
      .map(({ address, report: r }) => ({
        orgId: send.orgId,
        address,
        reason: r.status === 'complained' ? ('complaint' as const) : ('hard_bounce' as const),
        detail: r.status === 'complained' ? r.feedback_type : (r.diagnostic_code ?? r.status_code),
        sendId: send.sendId,
      })),
  )
  return [...changes, ...added.map(row => suppressionChange(row))]
}

/** The feed's record of an address added to the suppression list. */
export function suppressionChange(row: SuppressionRow, type: 'suppression.created' | 'suppression.deleted' = 'suppression.created'): ChangeInput {
  return {
    orgId: row.org_id,
    type,
    resource: { type: 'suppression', id: row.id },
    data: { address: row.address, reason: row.reason, detail: row.detail, send_id: row.send_id },
  }
}
