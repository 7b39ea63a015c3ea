/**
 * The statements that store a message (mail/ owns emails, email_contents and threads): the one
 * statement that writes a message with its thread and bytes, and the counters and notifications
 * of a batch. The rules (ids, batching, what features join) are in ./store.ts.
 */
import type postgres from 'postgres'
import type { Tx } from '../db/client'
import { EMAILS_CHANNEL } from '../events'
import { countStorage, countStoredMessage } from '../account/org-queries'
import { threadCtes } from './thread-queries'
import { searchVector } from './search-text'
import type { Extracted } from './inbound/threads'
import { arrivalLabels } from './label-queries'
import type { StoreInput } from './store-types'

/** A message as its statement writes it: the input, with what `storeEmail` settled. */
export interface EmailInsert extends StoreInput {
  id: string
  at: Date
  batched: boolean
  extracted: Extracted
  /** the addresses of From, To and Cc, for the thread */
  participants: string[]
  /** the new-mail notification's payload (`mailSignal`), sent unless `batched` */
  signal: string
}

/**
 * Stores a message in one statement: the thread (found and updated, or created), the email, its
 * bytes, the `extensions` the features join to it (contacts' counters, a sender's last activity),
 * and unless `batched` the storage counters and the new-mail NOTIFY (delivered on commit).
 * Returns the message's thread.
 */
export async function insertEmail(tx: Tx, s: EmailInsert, extensions: postgres.Fragment[]): Promise<string> {
  const { mail, extracted } = s
  const joined = extensions.reduce((all, extension) => tx`${all}, ${extension}`, tx``)
  const [row] = await tx<{ thread_id: string }[]>`
    with ${threadCtes(tx, {
      orgId: s.orgId,
      subject: mail.subject,
      messageIds: [...mail.references, ...(mail.inReplyTo ? [mail.inReplyTo] : [])],
      participants: s.participants,
      sender: mail.from?.address ?? null,
      at: s.at,
      threadId: s.threadId,
    })},
    email as (
      insert into emails (id, org_id, thread_id, direction, event_type, message_id, in_reply_to, "references",
                          from_address, from_name, to_addresses, cc_addresses, reply_to, subject, sent_at,
                          text_body, html_body, headers, attachments, mail_from, rcpt_to, remote_ip, helo, tls,
                          auth, size_bytes, received_at, search, extracted_text, extracted_html, labels)
      values (${s.id}, ${s.orgId}, (select id from thread), ${s.direction}, ${s.eventType}, ${mail.messageId}, ${mail.inReplyTo}, ${mail.references},
              ${mail.from?.address ?? null}, ${mail.from?.name ?? null}, ${tx.json(mail.to as never)}, ${tx.json(mail.cc as never)},
              ${tx.json(mail.replyTo as never)}, ${mail.subject}, ${mail.date}, ${mail.text}, ${mail.html},
              ${tx.json(mail.headers as never)}, ${tx.json(mail.attachments as never)}, ${s.mailFrom}, ${s.rcptTo},
              ${s.session?.remoteIp ?? null}, ${s.session?.helo ?? null}, ${s.session?.tls ?? false}, ${tx.json(s.auth as never)},
              ${s.raw.byteLength}, ${s.at},
              ${searchVector({ orgId: s.orgId, subject: mail.subject, fromName: mail.from?.name ?? null, fromAddress: mail.from?.address ?? null, text: mail.text, newText: extracted.text }, s.searchLexemes)}::tsvector,
              ${extracted.text}, ${extracted.html}, ${arrivalLabels(s.direction)}::text[])
      returning id, thread_id),
    content as (insert into email_contents (email_id, raw) select id, ${s.raw}::bytea from email),
    counters as (${countStoredMessage(tx, s.orgId, s.raw.byteLength, s.batched)})${joined}
    select thread_id, (select pg_notify(${EMAILS_CHANNEL}, ${s.signal}) where not ${s.batched}::boolean) from email`
  return row!.thread_id
}

/**
 * Adds `bytes[i]` and `emails[i]` to the storage counters of `orgs[i]` (sorted by the caller) and
 * sends the new-mail notification of each of `signals`, in one statement.
 */
export async function countStorageAndNotify(tx: Tx, orgs: string[], bytes: number[], emails: number[], signals: string[]): Promise<void> {
  await tx`
    with counters as (${countStorage(tx, orgs, bytes, emails)})
    select pg_notify(${EMAILS_CHANNEL}, signal) from unnest(${signals}::text[]) as signal`
}
