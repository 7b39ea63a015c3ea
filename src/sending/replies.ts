/**
 * Replying to a stored email: the reply goes to its Reply-To (or From), keeps its thread and
 * carries In-Reply-To and References. Mail nobody can answer is refused with 422
 * inbound_not_repliable and `details.reason`.
 */
import type { Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { findEmail } from '../mail/email-queries'

const NO_REPLY = /^(no-?reply|do-?not-?reply|mailer-daemon|postmaster|bounces?)([+._-].*)?@/i

export interface ReplyContext {
  threadId: string
  to: string
  subject: string
  inReplyTo: string | undefined
  references: string[]
}

/** `address`: a connection key's bound address, which may answer only the mail it can read. */
export async function replyContext(sql: Tx, orgId: string, emailId: string, address?: string): Promise<ReplyContext> {
  const email = await findEmail(sql, { id: emailId, orgId, address }, [
    'thread_id',
    'direction',
    'event_type',
    'from_address',
    'reply_to',
    'subject',
    'message_id',
    'references',
  ])
  if (!email) throw errors.notFound('in_reply_to_email_id')
  const refuse = (reason: string, message: string) => new ApiError('inbound_not_repliable', `in_reply_to_email_id: ${message}`, { reason })
  if (email.direction !== 'inbound') throw refuse('not_inbound', 'only received mail can be replied to')
  if (email.event_type === 'email.bounced') throw refuse('bounce', 'a bounce cannot be replied to')
  if (email.event_type !== 'email.received') throw refuse('report', 'a machine report cannot be replied to')
  const to = email.reply_to[0]?.address ?? email.from_address
  if (!to) throw refuse('no_address', 'the message has no From or Reply-To address')
  if (NO_REPLY.test(to)) throw refuse('no_reply_sender', `${to} does not accept replies`)
  return {
    threadId: email.thread_id,
    to,
    subject: /^re:/i.test(email.subject) ? email.subject : `Re: ${email.subject}`,
    inReplyTo: email.message_id ?? undefined,
    references: [...email.references, ...(email.message_id ? [email.message_id] : [])],
  }
}
