/** The decisions of the SMTP listener: which recipients exist, and storing what they are sent. */
import { LRUCache } from 'lru-cache'
import type { AppContext } from '../../context'
import type { SmtpHooks } from '../../smtp/types'
import { ingest } from './ingest'
import { replies, resolveRecipient, type ResolvedRecipient } from './recipients'

/** Long enough for a slow client's DATA after its RCPT (the idle timeout is 5 minutes). */
const RCPT_MEMORY_MS = 15 * 60_000

export function inboundHooks(ctx: AppContext): SmtpHooks {
  // Each recipient as resolved at RCPT, for the DATA of the same session: one lookup per
  // recipient and message, not two (see ingest for when it is looked up again). An entry that
  // is gone (a session that never sent DATA ages out) is looked up again at DATA.
  const resolved = new LRUCache<string, ResolvedRecipient>({ max: 100_000, ttl: RCPT_MEMORY_MS })
  const key = (sessionId: string, rcpt: string) => `${sessionId}\n${rcpt}`
  return {
    async onRcptTo(session, envelope, rcpt) {
      // One query: the recipient's organization and its storage headroom.
      const r = await resolveRecipient(ctx, rcpt)
      if (!('orgId' in r)) return r
      // Free plans refuse mail at their storage limit; 452 so the sender retries once space is freed.
      if (r.headroom !== null && r.headroom < (envelope.size ?? 1)) return replies.mailboxFull
      resolved.set(key(session.id, rcpt), r)
    },
    // Parsed, authenticated and committed with its deliveries before the 250 (a thrown error is a 451).
    async onData(session, envelope, message) {
      const recipients = envelope.rcptTo.map(rcpt => resolved.get(key(session.id, rcpt)))
      for (const rcpt of envelope.rcptTo) resolved.delete(key(session.id, rcpt))
      const { stored, refused } = await ingest(ctx, {
        raw: message,
        mailFrom: envelope.mailFrom,
        rcptTo: envelope.rcptTo,
        remoteIp: session.remoteAddress,
        helo: session.helo,
        tls: session.tls,
        recipients,
      })
      if (stored.length) return
      // Nothing stored: every organization's storage filled up since RCPT (the sender retries
      // later), or every mailbox went away meanwhile.
      return refused.length ? replies.mailboxFull : replies.unknownUser
    },
  }
}
