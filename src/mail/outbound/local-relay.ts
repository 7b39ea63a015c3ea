/**
 * The embedded relay (no SMTP_RELAY_URL): mail to addresses this service hosts (managed inboxes,
 * verified domains) goes straight into the inbound pipeline, as if it had arrived over SMTP from
 * 127.0.0.1, and is DKIM-verified there against our own keys; mail to anyone else is kept in
 * the local outbox (GET /v1/outbound/outbox) and logged, never sent.
 */
import type { AppContext } from '../../context'
import { log } from '../../log'
import { ingest } from '../inbound/ingest'
import { parseMail } from '../inbound/parse'
import { replies, resolveRecipients } from '../inbound/recipients'
import { localResolver } from './local-resolver'
import { insertOutbox } from './outbox'
import { RelayError, type Relay, type RelayEnvelope, type RelayResult } from './relay-types'

interface Sorted {
  hosted: { rcpt: string; orgId: string }[]
  outside: string[]
  /** recipients our own listener would refuse (a managed address with no inbox) */
  unknown: string[]
}

async function sortRecipients(ctx: AppContext, rcpts: string[]): Promise<Sorted> {
  const sorted: Sorted = { hosted: [], outside: [], unknown: [] }
  const resolved = await resolveRecipients(ctx, rcpts)
  for (const [i, rcpt] of rcpts.entries()) {
    const r = resolved[i]!
    if ('orgId' in r) sorted.hosted.push({ rcpt, orgId: r.orgId })
    else if (r === replies.relayDenied) sorted.outside.push(rcpt)
    else sorted.unknown.push(rcpt)
  }
  return sorted
}

export function createLocalRelay(ctx: AppContext): Relay {
  // the inbound pipeline authenticates the message against our own DKIM records
  const resolver = localResolver(ctx)

  return {
    kind: 'local',
    async send(envelope: RelayEnvelope, raw: string): Promise<RelayResult> {
      const { hosted, outside, unknown } = await sortRecipients(ctx, envelope.to)
      const bytes = new Uint8Array(Buffer.from(raw))
      const rejected = [...unknown]
      let full = 0

      if (outside.length) {
        const mail = await parseMail(bytes)
        const ids = await insertOutbox(ctx.sql, {
          orgId: envelope.orgId ?? null,
          envelopeFrom: envelope.from,
          rcpts: outside,
          subject: mail.subject,
          messageId: mail.messageId,
          raw,
        })
        log.info('outbound mail kept in the local outbox', {
          org_id: envelope.orgId ?? null,
          envelope_from: envelope.from,
          rcpt: outside,
          message_id: mail.messageId,
          outbox_ids: ids,
        })
      }

      if (hosted.length) {
        // tls false: the message never crossed a network, encrypted or not
        const rcptTo = hosted.map(h => h.rcpt)
        const result = await ingest(
          ctx,
          { raw: bytes, mailFrom: envelope.from, rcptTo, remoteIp: '127.0.0.1', helo: ctx.config.SMTP_HOSTNAME, tls: false },
          resolver,
        )
        const delivered = new Set(result.stored.flatMap(s => s.rcptTo.map(a => a.toLowerCase())))
        for (const { rcpt, orgId } of hosted) {
          // a relay attempt repeated after a crash: the message was stored by the first
          if (result.resent || delivered.has(rcpt.toLowerCase())) continue
          // its organization's storage is full, or the mailbox went away meanwhile
          rejected.push(rcpt)
          if (result.refused.includes(orgId)) full++
        }
      }

      const accepted = envelope.to.filter(r => !rejected.includes(r))
      // what our SMTP listener answers a managed address with no inbox: a hard bounce
      const { code, enhanced, message } = replies.unknownUser
      const refusals = unknown.map(address => ({ address, reply: `${code} ${enhanced} <${address}>: ${message}` }))
      if (!accepted.length) {
        // and 452 4.2.2 for a full mailbox
        if (full) throw new RelayError('outbound_capacity_exhausted', `local delivery refused: ${replies.mailboxFull.message}`, false, refusals)
        throw new RelayError('outbound_relay_failed', `local delivery refused: ${message}: ${rejected.join(', ')}`, false, refusals)
      }
      const stored = accepted.length - outside.length
      return { accepted, rejected, response: `250 2.0.0 local delivery: ${stored} stored here, ${outside.length} kept in the outbox`, refusals }
    },
    async close() {},
  }
}
