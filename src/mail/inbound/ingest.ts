/**
 * An accepted SMTP transaction becomes stored mail: parsed and authenticated once, then one
 * copy per recipient organization, each with its thread, storage accounting and follow-up
 * jobs, all in one transaction. The caller answers 250 only after this returns.
 */
import type { AppContext } from '../../context'
import { log } from '../../log'
import { storeEmail, type StoredEmail } from '../store'
import { enqueueDeliveries } from '../../webhooks/selection'
import { authenticateMessage } from './authenticate'
import { classify } from './classify'
import { parseMail } from './parse'
import { resolveRecipients } from './recipients'

export interface InboundMessage {
  raw: Uint8Array
  mailFrom: string
  rcptTo: string[]
  remoteIp: string
  helo?: string
  tls: boolean
  /** the inbound_queue row this message came from, deleted with the store (exactly once) */
  queueId?: string
}

/** What the store did with each organization's copy. */
export interface IngestResult {
  stored: StoredEmail[]
  /** organizations whose copy was refused because their storage is full */
  refused: string[]
}

/** The envelope recipients of each organization, with its storage headroom: one query for all. */
async function recipientsByOrg(ctx: AppContext, rcptTo: string[]): Promise<Map<string, { rcpts: string[]; headroom: number | null }>> {
  const byOrg = new Map<string, { rcpts: string[]; headroom: number | null }>()
  for (const r of await resolveRecipients(ctx, rcptTo)) {
    if (!('orgId' in r)) continue // refused at RCPT already; the mailbox may have gone since
    const org = byOrg.get(r.orgId) ?? { rcpts: [], headroom: r.headroom }
    org.rcpts.push(r.address)
    byOrg.set(r.orgId, org)
  }
  return byOrg
}

export async function ingest(ctx: AppContext, msg: InboundMessage): Promise<IngestResult> {
  const [byOrg, mail, auth] = await Promise.all([
    recipientsByOrg(ctx, msg.rcptTo),
    parseMail(msg.raw),
    authenticateMessage(msg.raw, { ip: msg.remoteIp, helo: msg.helo, mailFrom: msg.mailFrom, mta: ctx.config.SMTP_HOSTNAME }, ctx.resolver),
  ])
  const eventType = classify(mail, msg.mailFrom)
  const refused: string[] = []
  const accepted: [string, string[]][] = []
  for (const [orgId, { rcpts, headroom }] of byOrg) {
    if (headroom !== null && headroom < msg.raw.byteLength) refused.push(orgId)
    else accepted.push([orgId, rcpts])
  }
  const stored = await ctx.sql.begin(async tx => {
    if (msg.queueId) {
      const taken = await tx`delete from inbound_queue where id = ${msg.queueId} returning id`
      if (!taken.length) throw new Error(`inbound ${msg.queueId}: already processed`)
    }
    const out: StoredEmail[] = []
    for (const [orgId, rcpts] of accepted) {
      const email = await storeEmail(tx, {
        orgId, direction: 'inbound', eventType, mail, raw: msg.raw, mailFrom: msg.mailFrom, rcptTo: rcpts, auth,
        session: { remoteIp: msg.remoteIp, helo: msg.helo, tls: msg.tls },
      })
      await enqueueDeliveries(tx, ctx, email, mail)
      out.push(email)
    }
    return out
  })
  for (const email of stored) ctx.mailEvents.emit(email.orgId)
  for (const orgId of refused) log.warn('inbound copy refused: storage full', { org_id: orgId, size_bytes: msg.raw.byteLength })
  return { stored, refused }
}
