/**
 * The `account.verification_mail` job: one email carrying a signup verification code, sent with
 * sendSystemMail. Enqueued in the transaction that creates (or renews) the code and run inline
 * right after it commits; a relay failure leaves it to the worker's retries. The text carries the
 * code, so the payload keeps it sealed under the server key.
 */
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import type { JobKind } from '../jobs/kind'
import { enqueue } from '../jobs/queue'
import { runNow } from '../jobs/run'
import { sendSystemMail } from '../sending/system-mail'

export const VERIFICATION_MAIL_KIND = 'account.verification_mail'

interface Payload {
  to: string
  subject: string
  /** base64 of the sealed text */
  text_sealed: string
}

/** Codes live 15 minutes: retrying a failed send for longer would deliver a dead code. */
const MAX_ATTEMPTS = 5

export async function enqueueVerificationMail(ctx: AppContext, tx: Tx, mail: { to: string; subject: string; text: string }): Promise<string | null> {
  const payload: Payload = { to: mail.to, subject: mail.subject, text_sealed: ctx.keys.encrypt(mail.text).toString('base64') }
  return enqueue(tx, VERIFICATION_MAIL_KIND, payload, { maxAttempts: MAX_ATTEMPTS })
}

/** Sends a just-committed verification mail now, in this request; failures stay queued for the worker. */
export async function sendVerificationMailNow(ctx: AppContext, jobId: string | null) {
  if (jobId) await runNow(ctx, verificationMailJob, jobId)
}

export const verificationMailJob: JobKind<Payload> = {
  kind: VERIFICATION_MAIL_KIND,
  async handle(ctx, payload) {
    await sendSystemMail(ctx, { to: payload.to, subject: payload.subject, text: ctx.keys.decrypt(Buffer.from(payload.text_sealed, 'base64')) })
  },
  retryDelaySeconds: (_ctx, attempt) => Math.min(120, 5 * 2 ** attempt),
}
