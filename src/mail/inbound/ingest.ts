/**
 * An accepted SMTP transaction becomes stored mail: parsed and authenticated once, then one
 * copy per recipient organization, each with its thread, storage accounting and follow-up
 * jobs, all in one transaction. The caller answers 250 only after this returns.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../../context'
import type { Tx } from '../../db/client'
import { log } from '../../log'
import { notifyNewMail } from '../events'
import { enqueueDeliveries } from '../../webhooks/selection'
import { threadFor } from '../threads'
import { authenticateMessage, type AuthVerdicts } from './authenticate'
import { classify, type EmailEventType } from './classify'
import { parseMail, type ParsedMail } from './parse'
import { resolveRecipient, storageHeadroom } from './recipients'

export interface InboundMessage {
  raw: Uint8Array
  mailFrom: string
  rcptTo: string[]
  remoteIp: string
  helo?: string
  tls: boolean
}

export interface StoredEmail {
  id: string
  orgId: string
  threadId: string
  eventType: EmailEventType
  /** the envelope recipients of this organization */
  rcptTo: string[]
  mailFrom: string
  sizeBytes: number
  receivedAt: Date
  auth: AuthVerdicts
}

/** What the store did with each organization's copy. */
export interface IngestResult {
  stored: StoredEmail[]
  /** organizations whose copy was refused because their storage is full */
  refused: string[]
}

async function recipientsByOrg(ctx: AppContext, rcptTo: string[]): Promise<Map<string, string[]>> {
  const byOrg = new Map<string, string[]>()
  for (const address of rcptTo) {
    const r = await resolveRecipient(ctx, address)
    if (!('orgId' in r)) continue // refused at RCPT already; the mailbox may have gone since
    byOrg.set(r.orgId, [...(byOrg.get(r.orgId) ?? []), r.address])
  }
  return byOrg
}

async function insertEmail(tx: Tx, orgId: string, msg: InboundMessage, mail: ParsedMail, auth: AuthVerdicts, eventType: EmailEventType, rcpts: string[]): Promise<StoredEmail> {
  const id = randomUUIDv7()
  const at = new Date()
  const participants = [mail.from?.address, ...mail.to.map(a => a.address), ...mail.cc.map(a => a.address)].filter((a): a is string => Boolean(a))
  const threadId = await threadFor(tx, {
    orgId,
    subject: mail.subject,
    messageIds: [...mail.references, ...(mail.inReplyTo ? [mail.inReplyTo] : [])],
    participants,
    sender: mail.from?.address ?? null,
    at,
  })
  await tx`
    insert into emails (id, org_id, thread_id, direction, event_type, message_id, in_reply_to, "references",
                        from_address, from_name, to_addresses, cc_addresses, reply_to, subject, sent_at,
                        text_body, html_body, headers, attachments, mail_from, rcpt_to, remote_ip, helo, tls,
                        auth, size_bytes, received_at)
    values (${id}, ${orgId}, ${threadId}, 'inbound', ${eventType}, ${mail.messageId}, ${mail.inReplyTo}, ${mail.references},
            ${mail.from?.address ?? null}, ${mail.from?.name ?? null}, ${tx.json(mail.to as never)}, ${tx.json(mail.cc as never)},
            ${tx.json(mail.replyTo as never)}, ${mail.subject}, ${mail.date}, ${mail.text}, ${mail.html},
            ${tx.json(mail.headers as never)}, ${tx.json(mail.attachments as never)}, ${msg.mailFrom}, ${rcpts},
            ${msg.remoteIp}, ${msg.helo ?? null}, ${msg.tls}, ${tx.json(auth as never)}, ${msg.raw.byteLength}, ${at})`
  await tx`insert into email_contents (email_id, raw) values (${id}, ${msg.raw})`
  await tx`
    update orgs set storage_used_bytes = storage_used_bytes + ${msg.raw.byteLength}, emails_count = emails_count + 1
     where id = ${orgId}`
  await notifyNewMail(tx, orgId)
  return { id, orgId, threadId, eventType, rcptTo: rcpts, mailFrom: msg.mailFrom, sizeBytes: msg.raw.byteLength, receivedAt: at, auth }
}

export async function ingest(ctx: AppContext, msg: InboundMessage): Promise<IngestResult> {
  const byOrg = await recipientsByOrg(ctx, msg.rcptTo)
  const [mail, auth] = await Promise.all([
    parseMail(msg.raw),
    authenticateMessage(msg.raw, { ip: msg.remoteIp, helo: msg.helo, mailFrom: msg.mailFrom, mta: ctx.config.SMTP_HOSTNAME }, ctx.resolver),
  ])
  const eventType = classify(mail, msg.mailFrom)
  const refused: string[] = []
  const accepted: [string, string[]][] = []
  for (const [orgId, rcpts] of byOrg) {
    const headroom = await storageHeadroom(ctx, orgId)
    if (headroom !== null && headroom < msg.raw.byteLength) refused.push(orgId)
    else accepted.push([orgId, rcpts])
  }
  const stored = await ctx.sql.begin(async tx => {
    const out: StoredEmail[] = []
    for (const [orgId, rcpts] of accepted) {
      const email = await insertEmail(tx, orgId, msg, mail, auth, eventType, rcpts)
      await enqueueDeliveries(tx, ctx, email, mail)
      out.push(email)
    }
    return out
  })
  for (const email of stored) ctx.mailEvents.emit(email.orgId)
  for (const orgId of refused) log.warn('inbound copy refused: storage full', { org_id: orgId, size_bytes: msg.raw.byteLength })
  return { stored, refused }
}
