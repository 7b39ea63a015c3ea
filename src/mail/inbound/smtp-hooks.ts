/** The decisions of the SMTP listener: which recipients exist, and storing what they are sent. */
import type { AppContext } from '../../context'
import type { SmtpHooks } from '../../smtp/types'
import { ingest } from './ingest'
import { replies, resolveRecipient, type ResolvedRecipient } from './recipients'

export function inboundHooks(ctx: AppContext): SmtpHooks {
  return {
    async onRcptTo(_session, envelope, rcpt) {
      // One query: the recipient's organization and its storage headroom.
      const r = await resolveRecipient(ctx, rcpt)
      if (!('orgId' in r)) return r
      // Free plans refuse mail at their storage limit; 452 so the sender retries once space is freed.
      if (r.headroom !== null && r.headroom < (envelope.size ?? 1)) return replies.mailboxFull
      // Kept with the transaction for its DATA: one lookup per recipient and message, not two.
      // The storage limit is checked again, exactly, when the copy is stored (ingest).
      envelope.notes.set(rcpt, r)
    },
    // Parsed, authenticated and committed with its deliveries before the 250 (a thrown error is a 451).
    async onData(session, envelope, message) {
      const { stored, refused, resent } = await ingest(ctx, {
        raw: message,
        mailFrom: envelope.mailFrom,
        rcptTo: envelope.rcptTo,
        remoteIp: session.remoteAddress,
        helo: session.helo,
        tls: session.tls,
        recipients: envelope.rcptTo.map(rcpt => envelope.notes.get(rcpt) as ResolvedRecipient | undefined),
      })
      // stored now, or before: a client sending again a message whose 250 it missed gets its 250
      if (stored.length || resent) return
      // Nothing stored: every organization's storage filled up since RCPT (the sender retries
      // later), or every mailbox went away meanwhile.
      return refused.length ? replies.mailboxFull : replies.unknownUser
    },
  }
}
