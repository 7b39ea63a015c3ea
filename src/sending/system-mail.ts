/**
 * Mail the service sends on its own behalf (verification codes): from `no-reply@` the managed
 * domain, DKIM-signed with the managed domain's key, through the same relay as customer mail.
 * In development (the local relay) it lands in the local outbox, readable there and in the log.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { buildMime } from '../mail/outbound/build'
import { dkimSign, signingKeyFor } from '../mail/outbound/dkim'
import { relayOf } from './relay'

export interface SystemMail {
  to: string
  subject: string
  text: string
}

export async function sendSystemMail(ctx: AppContext, mail: SystemMail): Promise<void> {
  const domain = ctx.config.MANAGED_DOMAIN
  const from = `no-reply@${domain}`
  const mime = buildMime({
    from: { address: from, name: 'Agent Mail' },
    to: [mail.to],
    cc: [],
    bcc: [],
    subject: mail.subject,
    text: mail.text,
    messageId: `<${randomUUIDv7()}@${domain}>`,
    date: new Date(),
    headers: { 'Auto-Submitted': 'auto-generated' },
  })
  const key = await signingKeyFor(ctx, null, domain)
  await relayOf(ctx).send({ from, to: [mail.to], orgId: null }, key ? await dkimSign(mime, key) : mime)
}
