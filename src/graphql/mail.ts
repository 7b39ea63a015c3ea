/** Domains, inboxes, received and sent mail, threads. */
import { presentEmail, presentSummary, presentThread } from '../emails/service'
import { errors } from '../errors'
import { allow, type GqlContext } from './context'
import { CONNECTION_ARGS, childConnection, connectionTypes, type ConnectionArgs } from './connection'
import type { Resolver, SchemaModule } from './module'
import { emailById } from './related'

/** What only the full message has: an email from a list is completed through the batch loader. */
const FULL_FIELDS = [
  'messageId',
  'inReplyTo',
  'references',
  'replyTo',
  'sentAt',
  'text',
  'html',
  'extractedText',
  'extractedHtml',
  'headers',
  'attachments',
  'authentication',
  'envelope',
  'contentDiscardedAt',
] as const
const snake = (name: string) => name.replace(/[A-Z]/g, c => `_${c.toLowerCase()}`)

async function fullEmail(g: GqlContext, email: { id: string; text?: unknown }) {
  if ('text' in email) return email as ReturnType<typeof presentEmail>
  const row = await g.loaders.email.load(email.id)
  if (!row) throw errors.notFound('email')
  return presentEmail(row)
}

async function thread(g: GqlContext, id: string | null) {
  allow(g, '/v1/threads/:id', 'threads')
  if (!id) return null
  const row = await g.loaders.thread.load(id)
  return row ? presentThread(row) : null
}

export const mailModule: SchemaModule = {
  sdl: `
enum Direction { inbound outbound }

type Domain {
  id: ID!
  domain: String!
  "pending or verified"
  status: String!
  createdAt: DateTime!
  verifiedAt: DateTime
  lastCheckedAt: DateTime
  "the records to publish, each with the status of its last check"
  dnsRecords: [DnsRecord!]!
  "the last verification's checks per purpose; null before every purpose was checked"
  checks: JSON
}

type DnsRecord {
  type: String!
  name: String!
  value: String!
  priority: Int
  purpose: String!
  status: String!
}

type Inbox {
  id: ID!
  address: String!
  displayName: String
  createdAt: DateTime!
}

type MailAddress {
  address: String!
  name: String!
}

type Header {
  name: String!
  value: String!
}

type Attachment {
  index: Int!
  filename: String
  contentType: String!
  sizeBytes: Int!
  contentId: String
  disposition: String
}

type Envelope {
  mailFrom: String
  rcptTo: [String!]!
  remoteIp: String
  helo: String
  tls: Boolean!
}

"""
A received or sent message. The fields from messageId on are the full message: asked for on a
list, they are read for all its messages at once.
"""
type Email {
  id: ID!
  threadId: ID!
  direction: Direction!
  "email.received, or email.bounced / email.tls_report / email.dmarc_report / email.dmarc_failure; outbound: email.sent or email.replied"
  eventType: String!
  from: MailAddress
  to: [MailAddress!]!
  cc: [MailAddress!]!
  subject: String!
  receivedAt: DateTime!
  sizeBytes: Int!
  attachmentCount: Int!
  contentDiscarded: Boolean!
  "sorted: system labels (inbound, unread, read, sent) and the organization's own"
  labels: [String!]!
  messageId: String
  inReplyTo: String
  references: [String!]!
  replyTo: [MailAddress!]!
  "the Date header"
  sentAt: DateTime
  text: String
  html: String
  "the new content of a received message: text without the quoted earlier messages, the 'On … wrote:' line and a trailing signature; '' when all quote; null for sent mail and mail stored before extraction"
  extractedText: String
  "the HTML body without its quotes and signature; null without an HTML body"
  extractedHtml: String
  headers: [Header!]!
  attachments: [Attachment!]!
  "mailauth verdicts (spf, dkim, dmarc, arc); only pass means authenticated"
  authentication: JSON!
  envelope: Envelope!
  contentDiscardedAt: DateTime
  "the conversation (not for connection keys)"
  thread: Thread
}

type Label {
  name: String!
  "true for the labels the service sets (inbound, sent, unread, read)"
  system: Boolean!
  "null for a system label"
  createdAt: DateTime
}

type Thread {
  id: ID!
  subject: String!
  participants: [String!]!
  messageCount: Int!
  lastMessageAt: DateTime!
  createdAt: DateTime!
  "the union of its messages' labels, sorted"
  labels: [String!]!
  "its messages, newest first"
  emails(${CONNECTION_ARGS}): EmailConnection!
}

type SendError {
  code: String!
  message: String!
}

type SendRepeat {
  everyMinutes: Int!
  ticks: Int!
  nextAt: DateTime
  stoppedAt: DateTime
  stoppedBy: String
}

type SentEmail {
  id: ID!
  "sending, queued, scheduled, executing, executed, failed or canceled"
  status: String!
  from: String!
  to: [String!]!
  cc: [String!]!
  bcc: [String!]!
  subject: String!
  scheduledAt: DateTime
  emailId: ID
  threadId: ID
  accepted: [String!]!
  rejected: [String!]!
  "each recipient with what became of it (bounces and complaints included)"
  recipients: [SendRecipient!]!
  relayResponse: String
  error: SendError
  repeat: SendRepeat
  createdAt: DateTime!
  updatedAt: DateTime!
  "the stored message of the last execution"
  email: Email
  thread: Thread
}

type SendRecipient {
  address: String!
  "pending, accepted, rejected, bounced or complained"
  status: String!
  "hard or soft, when bounced"
  bounceType: String
  "the RFC 3463 status of the bounce, e.g. 5.1.1"
  statusCode: String
  diagnosticCode: String
  "the abuse report's Feedback-Type, when complained"
  feedbackType: String
  reportedAt: DateTime
}

"an address the organization no longer sends to"
type Suppression {
  id: ID!
  address: String!
  "hard_bounce, complaint or manual"
  reason: String!
  detail: String
  sendId: ID
  createdAt: DateTime!
}

${connectionTypes('Domain', 'domains')}
${connectionTypes('Suppression', 'suppressed addresses')}
${connectionTypes('Inbox', 'inboxes')}
${connectionTypes('Email', 'messages')}
${connectionTypes('Thread', 'threads')}
${connectionTypes('SentEmail', 'sends')}
`,
  resolvers: {
    Email: {
      ...Object.fromEntries(
        FULL_FIELDS.map(f => [f, (async (e, _a, g) => (await fullEmail(g, e))[snake(f) as keyof ReturnType<typeof presentEmail>]) as Resolver]),
      ),
      thread: (e: { thread_id: string }, _a, g) => thread(g, e.thread_id),
    },
    Thread: {
      emails: async (t: { id: string }, args: ConnectionArgs, g) => {
        allow(g, '/v1/emails', 'mail')
        return childConnection(g.ctx, `gql:thread-emails:${t.id}`, args, g.loaders.threadEmails, t.id, presentSummary)
      },
    },
    SentEmail: {
      email: (s: { email_id: string | null }, _a, g) => emailById(g, s.email_id),
      thread: (s: { thread_id: string | null }, _a, g) => thread(g, s.thread_id),
    },
  },
}
