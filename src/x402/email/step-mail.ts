/**
 * Which stored inbound mail carries an email-native x402 step: a consumer of the inbound store
 * (src/plugins.ts) that asks this of every copy and gives such mail to the step job (inbound.ts)
 * in the transaction that stores it. Kept apart from the job so that plugging it in does not load
 * the payment services.
 */
import { enqueue } from '../../jobs/queue'
import type { ReceivedMailConsumer } from '../../mail/inbound/ingest'
import { STEP_FILENAME } from './steps'

export const STEP_KIND = 'x402.email.step'

/** For each received copy: a job for a message that carries a step. */
export const inboundSteps: ReceivedMailConsumer = () => async (tx, email, mail) => {
  if (!mail.attachments.some(a => a.filename?.toLowerCase() === STEP_FILENAME)) return
  await enqueue(tx, STEP_KIND, { email_id: email.id }, { maxAttempts: 8 })
}
