/**
 * Storing a message, inbound or outbound: its thread, the parsed fields, the exact bytes, the
 * organization's storage accounting and the new-mail notification, in the caller's transaction.
 */
import { randomUUIDv7 } from 'bun'
import type { Tx } from '../db/client'
import { EMAILS_CHANNEL } from './events'
import { threadCtes } from './threads'
import type { AuthVerdicts } from './inbound/authenticate'
import type { EmailEventType } from './inbound/classify'
import type { ParsedMail } from './inbound/parse'

export interface StoreInput {
  orgId: string
  direction: 'inbound' | 'outbound'
  eventType: EmailEventType
  mail: ParsedMail
  raw: Uint8Array
  mailFrom: string
  rcptTo: string[]
  auth: AuthVerdicts
  session?: { remoteIp: string; helo?: string; tls: boolean }
  /** keep the message in this thread (a reply we send) instead of threading by its headers */
  threadId?: string
  /** the email's id, for a caller that refers to it in a statement sent before this one returns */
  id?: string
}

export interface StoredEmail {
  id: string
  orgId: string
  threadId: string
  eventType: EmailEventType
  /** the envelope recipients of this organization's copy */
  rcptTo: string[]
  mailFrom: string
  sizeBytes: number
  receivedAt: Date
  auth: AuthVerdicts
}

export async function storeEmail(tx: Tx, s: StoreInput): Promise<StoredEmail> {
  const id = s.id ?? randomUUIDv7()
  const at = new Date()
  const { mail } = s
  const participants = [mail.from?.address, ...mail.to.map(a => a.address), ...mail.cc.map(a => a.address)].filter((a): a is string => Boolean(a))
  // One statement: the thread (found and updated, or created), the email, its bytes, the storage
  // counters and the new-mail NOTIFY (delivered on commit).
  const [row] = await tx<{ thread_id: string }[]>`
    with ${threadCtes(tx, {
      orgId: s.orgId,
      subject: mail.subject,
      messageIds: [...mail.references, ...(mail.inReplyTo ? [mail.inReplyTo] : [])],
      participants,
      sender: mail.from?.address ?? null,
      at,
      threadId: s.threadId,
    })},
    email as (
      insert into emails (id, org_id, thread_id, direction, event_type, message_id, in_reply_to, "references",
                          from_address, from_name, to_addresses, cc_addresses, reply_to, subject, sent_at,
                          text_body, html_body, headers, attachments, mail_from, rcpt_to, remote_ip, helo, tls,
                          auth, size_bytes, received_at)
      values (${id}, ${s.orgId}, (select id from thread), ${s.direction}, ${s.eventType}, ${mail.messageId}, ${mail.inReplyTo}, ${mail.references},
              ${mail.from?.address ?? null}, ${mail.from?.name ?? null}, ${tx.json(mail.to as never)}, ${tx.json(mail.cc as never)},
              ${tx.json(mail.replyTo as never)}, ${mail.subject}, ${mail.date}, ${mail.text}, ${mail.html},
              ${tx.json(mail.headers as never)}, ${tx.json(mail.attachments as never)}, ${s.mailFrom}, ${s.rcptTo},
              ${s.session?.remoteIp ?? null}, ${s.session?.helo ?? null}, ${s.session?.tls ?? false}, ${tx.json(s.auth as never)},
              ${s.raw.byteLength}, ${at})
      returning id, thread_id),
    content as (insert into email_contents (email_id, raw) select id, ${s.raw}::bytea from email),
    counters as (
      update orgs set storage_used_bytes = storage_used_bytes + ${s.raw.byteLength}, emails_count = emails_count + 1
       where id = ${s.orgId})
    select thread_id, pg_notify(${EMAILS_CHANNEL}, ${s.orgId}) from email`
  const threadId = row!.thread_id
  return { id, orgId: s.orgId, threadId, eventType: s.eventType, rcptTo: s.rcptTo, mailFrom: s.mailFrom, sizeBytes: s.raw.byteLength, receivedAt: at, auth: s.auth }
}
