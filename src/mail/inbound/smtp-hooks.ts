/** The decisions of the SMTP listener: which recipients exist, and accepting what they are sent. */
import type { AppContext } from '../../context'
import type { SmtpHooks } from '../../smtp/types'
import { acceptInbound } from './queue'
import { replies, resolveRecipient } from './recipients'

export function inboundHooks(ctx: AppContext): SmtpHooks {
  return {
    async onRcptTo(_session, envelope, rcpt) {
      // One query: the recipient's organization and its storage headroom.
      const r = await resolveRecipient(ctx, rcpt)
      if (!('orgId' in r)) return r
      // Free plans refuse mail at their storage limit; 452 so the sender retries once space is freed.
      if (r.headroom !== null && r.headroom < (envelope.size ?? 1)) return replies.mailboxFull
    },
    // Committed with its ingest job before the 250; parsing, authentication and storing follow in the worker.
    async onData(session, envelope, message) {
      const id = await acceptInbound(ctx, {
        raw: message,
        mailFrom: envelope.mailFrom,
        rcptTo: envelope.rcptTo,
        remoteIp: session.remoteAddress,
        helo: session.helo,
        tls: session.tls,
      })
      return { code: 250, enhanced: '2.0.0', message: `ok: queued as ${id}` }
    },
  }
}
