/**
 * First-send gates. On the reply-only agent plan, `send_to_known_addresses` allows a recipient
 * only after that address wrote to the organization first with authenticated mail: DMARC pass,
 * and a passing DKIM signature that covers the To header (so the message was really addressed
 * to us). A contact of the sending address admitted from an agent network carries a send grant
 * that also lets it through while the agent still accepts contacts there (src/contacts/grants.ts).
 * Each refused recipient becomes one entry of `error.gates[]`.
 */
import { recentInboundFrom } from '../mail/email-queries'
import type { Tx } from '../db/client'
import { docsPath, errors, type Gate } from '../errors'
import type { AuthVerdicts } from '../mail/inbound/authenticate'
import { grantsOf } from '../contacts/grants'

const GATE = 'send_to_known_addresses'
const DOCS = docsPath('send-gates')

type Reason =
  | 'recipient_not_known'
  | 'recipient_only_sent_reports'
  | 'recipient_unauthenticated'
  | 'recipient_weak_binding'
  | 'recipient_grant_not_recorded'
  | 'recipient_grant_denied'

const REASONS: Record<Reason, { message: (a: string) => string; fix: string }> = {
  recipient_not_known: { message: a => `${a} has not written to this organization yet`, fix: 'wait_for_inbound' },
  recipient_only_sent_reports: { message: a => `${a} has only sent bounces or reports`, fix: 'wait_for_inbound' },
  recipient_unauthenticated: { message: a => `mail from ${a} did not pass DMARC`, fix: 'sender_must_fix_authentication' },
  recipient_weak_binding: { message: a => `mail from ${a} passed DMARC but no DKIM signature covered the To header`, fix: 'sender_dkim_must_sign_to_header' },
  recipient_grant_not_recorded: {
    message: a => `${a} is a contact added by hand, which records no send grant, and has not written yet`,
    fix: 'wait_for_inbound',
  },
  recipient_grant_denied: { message: a => `${a} was admitted from an agent network but no longer accepts contacts there`, fix: 'wait_for_inbound' },
}

/** Why the best mail from `address` does not let the organization write to it, or null if it does. */
function verdict(history: { event_type: string; auth: AuthVerdicts }[]): Reason | null {
  if (!history.length) return 'recipient_not_known'
  const personal = history.filter(m => m.event_type === 'email.received')
  if (!personal.length) return 'recipient_only_sent_reports'
  const dmarcPass = personal.filter(m => m.auth.dmarc?.result === 'pass')
  if (!dmarcPass.length) return 'recipient_unauthenticated'
  const bound = dmarcPass.some(m => m.auth.dkim?.some(d => d.result === 'pass' && d.aligned && d.signed_headers.includes('to')))
  return bound ? null : 'recipient_weak_binding'
}

/**
 * Throws 403 recipient_not_allowed with one gate per refused recipient. A recipient that has not
 * written is allowed by a send grant of a contact of `from`; without one, a contact says why.
 */
export async function enforceKnownRecipients(sql: Tx, orgId: string, from: string, recipients: string[]): Promise<void> {
  const refused = new Map<string, Reason>()
  for (const address of [...new Set(recipients.map(r => r.toLowerCase()))]) {
    const history = await recentInboundFrom(sql, orgId, address, 50)
    const reason = verdict(history)
    if (reason) refused.set(address, reason)
  }
  if (!refused.size) return
  const grants = await grantsOf(sql, orgId, from.toLowerCase(), [...refused.keys()])
  const gates: Gate[] = []
  for (const [address, mailReason] of refused) {
    const grant = grants.get(address)
    if (grant === 'granted') continue
    const reason: Reason =
      mailReason !== 'recipient_not_known' || grant === undefined ? mailReason : grant === 'denied' ? 'recipient_grant_denied' : 'recipient_grant_not_recorded'
    const r = REASONS[reason]
    gates.push({ name: GATE, reason, message: r.message(address), subject: address, fix: { action: r.fix, subject: address }, docs_url: DOCS })
  }
  if (gates.length) {
    throw errors.recipientsRefused(`to: ${gates.length} recipient(s) refused by the ${GATE} gate of the reply-only plan`, gates)
  }
}
