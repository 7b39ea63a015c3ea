/** What storing a message takes (./store.ts), and the event types a stored message carries. */
import type { AuthVerdicts } from './inbound/authenticate'
import type { EmailEventType } from './inbound/classify'
import type { ParsedMail } from './inbound/parse'
import type { Extracted } from './inbound/threads'

/**
 * The event types of the sender's copy of mail sent through the API (the names of the outbound
 * events): a new message, or an answer to a message the organization received.
 */
export const SENT_EVENT_TYPES = ['email.sent', 'email.replied'] as const
export type StoredEventType = EmailEventType | (typeof SENT_EVENT_TYPES)[number]

export interface StoreInput {
  orgId: string
  direction: 'inbound' | 'outbound'
  eventType: StoredEventType
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
  /** the new content of a received message (inbound/extract.ts); none for sent mail */
  extracted?: Extracted
  /** its search vector's words (`messageLexemes` of the message and `extracted`), where they were cut already */
  searchLexemes?: string
  /**
   * The caller counts the message in its organization's storage and sends the new-mail
   * notification, once for many messages (inbound batches: reserveStorage, countStored).
   */
  batched?: boolean
}
