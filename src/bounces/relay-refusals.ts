/**
 * A relay's permanent refusal of a recipient at delivery (a 5xx reply to RCPT TO) is a hard
 * bounce: no report mail will follow, since the relay never took the message. It is recorded
 * like a bounce that came back by mail, and its email.bounced event goes to the endpoint that
 * mail to the sender goes to (where the report would have arrived), with `email: null`.
 */
import type { AppContext } from '../context'
import { recordChanges } from '../changes/record'
import { mailEvents } from '../events'
import { log } from '../log'
import type { Refusal } from '../mail/outbound/relay'
import { enqueueAddressEvent } from '../webhooks/selection'
import { eventRecipients, recordReports, type ReportedRecipient } from './record'

const PERMANENT = /^5\d\d\b/
const ENHANCED = /\b([45]\.\d{1,3}\.\d{1,3})\b/

/** Records the hard bounces among a send's refusals, in a transaction of its own; a failure is logged, never thrown (the message went out). */
export async function recordRelayRefusals(
  ctx: AppContext,
  send: { id: string; org_id: string; from_address: string; last_email_id: string | null },
  refusals: Refusal[],
): Promise<void> {
  const hard = refusals.filter(r => PERMANENT.test(r.reply.trim()))
  if (!hard.length) return
  const at = new Date().toISOString()
  const reported: ReportedRecipient[] = hard.map(r => ({
    address: r.address.toLowerCase(),
    report: {
      status: 'bounced',
      bounce_type: 'hard',
      status_code: ENHANCED.exec(r.reply)?.[1] ?? null,
      diagnostic_code: `smtp; ${r.reply.trim()}`,
      feedback_type: null,
      source: 'relay',
      email_id: send.last_email_id,
      report_email_id: null,
      reported_at: at,
    },
  }))
  const bounce = { send_id: send.id, email_id: send.last_email_id, source: 'relay', recipients: eventRecipients(reported) }
  try {
    await ctx.sql.begin(async tx => {
      const deliveries = await enqueueAddressEvent(tx, ctx, {
        orgId: send.org_id,
        address: send.from_address,
        eventType: 'email.bounced',
        event: id => ({ event: 'email.bounced', id, created_at: at, send_id: send.id, bounce, email: null }),
      })
      const changes = await recordReports(tx, { orgId: send.org_id, sendId: send.id, from: send.from_address }, reported)
      await recordChanges(tx, [...changes, ...deliveries])
    })
    mailEvents(ctx).emitChange(send.org_id)
  } catch (error) {
    log.error('relay refusals not recorded', { send_id: send.id, error: (error as Error).message })
  }
}
