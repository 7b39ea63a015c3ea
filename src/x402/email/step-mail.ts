/**
 * Which stored inbound mail carries an email-native x402 step: the inbound store asks this of
 * every copy and gives such mail to the step job (inbound.ts) in the transaction that stores it.
 * Kept apart from the job so the inbound pipeline does not load the payment services, which
 * send mail and so would load the inbound pipeline back.
 */
import type { Tx } from '../../db/client'
import { enqueue } from '../../jobs/queue'
import type { ParsedMail } from '../../mail/inbound/parse'
import type { StoredEmail } from '../../mail/store'
import { STEP_FILENAME } from './steps'

export const STEP_KIND = 'x402.email.step'

/** Called by the inbound store for each stored copy: a job for a message that carries a step. */
export async function enqueueInboundStep(tx: Tx, email: StoredEmail, mail: ParsedMail): Promise<void> {
  if (!mail.attachments.some(a => a.filename?.toLowerCase() === STEP_FILENAME)) return
  await enqueue(tx, STEP_KIND, { email_id: email.id }, { maxAttempts: 8 })
}
