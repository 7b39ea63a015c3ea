/**
 * Mail reads as operations (src/http/operation.ts): the list of mail (and the MCP tool
 * wait_for_email, its long-poll for a model), one message, its content discarded, threads, and
 * search. Where the surfaces differ on purpose, the declarations say so: the tool list_emails and
 * the GraphQL field emails take some of the list's filters only, the tool get_email answers signed
 * download links (links.ts), search_emails names REST's `q` `query`. Still written by hand
 * (routes.ts): the raw and attachment downloads, which answer bytes with their own headers and
 * also take a signed token instead of a credential.
 */
import { type Static, t } from 'elysia'
import { errors } from '../errors'
import { mailEvents, pollMail } from '../events'
import { listOperation, operation, TOOL_PAGE, type OperationCall } from '../http/operation'
import { ADDRESS, OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { getInbox } from '../mail/inbox-queries'
import { EMAIL_EVENT_TYPES } from '../mail/inbound/classify'
import { SENT_EVENT_TYPES } from '../mail/store-types'
import { LabelFilter } from '../labels/model'
import { EmailWithLinks, withLinks } from './links'
import { Email, ListedEmail, MAX_WAIT_SECONDS, Summary, Thread } from './model'
import { discardContent, type EmailFilters, getEmail, listEmails, listThreads, searchEmails } from '../mail/email-queries'
import { getThread, presentEmail, presentListed, presentSummary, presentThread } from './service'

const Id = (description?: string) => ({ id: t.String({ format: 'uuid', ...(description && { description }) }) })

/** The filters of GET /v1/emails: its query (the tool list_emails and the field emails take some of them). */
const EmailQuery = t.Object({
  since: t.Optional(Timestamp('only mail received after this instant')),
  wait: t.Optional(
    t.Integer({
      minimum: 0,
      maximum: MAX_WAIT_SECONDS,
      description: `long-poll: when nothing matches, wait up to this many seconds (max ${MAX_WAIT_SECONDS}) for new mail`,
    }),
  ),
  direction: t.Optional(t.Union([t.Literal('inbound'), t.Literal('outbound')])),
  thread_id: t.Optional(t.String({ format: 'uuid', description: 'only this thread' })),
  event_type: t.Optional(OneOf([...EMAIL_EVENT_TYPES, ...SENT_EVENT_TYPES])),
  inbox_id: t.Optional(
    t.String({
      format: 'uuid',
      description: "only this inbox's mail: received at its address or sent from it (404 for an inbox that is not the organization's)",
    }),
  ),
  address: t.Optional(
    t.String({
      pattern: ADDRESS,
      maxLength: 320,
      error: 'must be an email address',
      description: 'only mail received at this address (an envelope recipient) or sent from it',
    }),
  ),
  label: LabelFilter,
  include_extracted: t.Optional(
    t.Boolean({ description: "add each message's extracted_text and extracted_html: the reply without its quotes (default false)" }),
  ),
})

/** The label filter, each label once, in one order (a cursor's scope names them so). */
const labelsOf = (label: readonly string[] | undefined) => [...new Set(label ?? [])].sort()

/** GraphQL's check of an address (REST's schema has a stricter one). */
const LOOSE_ADDRESS = /^[^\s@]+@[^\s@]+$/

/** The filters of a list of mail, looked up before its cursor is read: an inbox not the organization's is not_found first. */
async function emailFilters({ ctx, auth }: OperationCall, q: Static<typeof EmailQuery>): Promise<EmailFilters> {
  const inbox = q.inbox_id ? await getInbox(ctx.sql, auth.orgId, q.inbox_id) : undefined
  // a GraphQL address is checked here, and spaces around it dropped; REST's schema refused both already
  const address = q.address?.trim().toLowerCase()
  if (address !== undefined && !LOOSE_ADDRESS.test(address)) throw errors.validation('address', 'must be an email address')
  return {
    since: q.since ? parseTimestamp('since', q.since) : null,
    direction: q.direction,
    threadId: q.thread_id,
    eventType: q.event_type,
    addresses: [auth.boundAddress, inbox?.address, address].filter(a => a !== undefined),
    labels: labelsOf(q.label),
  }
}

export const emailOperations = [
  listOperation({
    name: 'list_emails',
    method: 'GET',
    path: '/v1/emails',
    tag: 'Emails',
    summary: 'List mail, newest first; long-poll with wait',
    description: 'The filters combine (all must hold). A cursor continues the list it came from: with other filters it is a validation_error.',
    input: EmailQuery,
    mcp: {
      title: 'List emails',
      description:
        'Received and sent mail, newest first, without bodies. Filter by direction, thread or time; include_extracted adds each reply without its quotes. ' +
        'Read one with get_email.',
      // a model waits with wait_for_email; the connection key's address is its filter
      input: ['direction', 'thread_id', 'label', 'since', 'include_extracted'],
    },
    graphql: {
      field: 'emails',
      type: 'Email',
      description: 'Received and sent mail, newest first (as GET /v1/emails); the filters combine. A connection key\nsees only the mail of its address.',
      args: { direction: 'Direction', since: 'DateTime', label: '[String!]' },
      input: ['direction', 'thread_id', 'address', 'label', 'since'],
    },
    list: {
      item: ListedEmail,
      // A cursor continues the list it came from: it is signed for these filters and refused with others
      // (include_extracted is not a filter: a page may ask for the new content or not).
      scope: (_call, q) =>
        `emails?${JSON.stringify([q.since ?? null, q.direction ?? null, q.thread_id ?? null, q.event_type ?? null, q.inbox_id ?? null, q.address?.toLowerCase() ?? null, labelsOf(q.label)])}`,
      prepare: emailFilters,
      fetch: ({ ctx, auth, signal }, q, page, filters: EmailFilters) => {
        const read = () => listEmails(ctx.sql, auth.orgId, page, filters, q.include_extracted ?? false)
        if (!q.wait || page.after) return read()
        // A long-poll of an address (a connection key's, an inbox's, address=) wakes for that address's mail only.
        return pollMail(mailEvents(ctx), { orgId: auth.orgId, address: filters.addresses[0], ms: q.wait * 1000, signal }, read, r => r.rows.length > 0)
      },
      present: presentListed,
    },
  }),
  operation({
    name: 'wait_for_email',
    method: 'GET',
    path: '/v1/emails',
    tag: 'Emails',
    summary: 'Wait for an email',
    description:
      `Blocks until mail arrives for an address (or any address of the organization), or until timeout_seconds (at most ${MAX_WAIT_SECONDS}) pass. ` +
      'Pass the returned next_since as since on the next call so nothing is missed between calls.',
    // the tool of GET /v1/emails?wait= (list_emails makes the route), with arguments and an answer of its own
    rest: false,
    input: t.Object({
      address: t.Optional(
        t.String({
          maxLength: 320,
          description: 'the receiving address; omitted: any address of the organization (a connection key always waits for its own)',
        }),
      ),
      since: t.Optional(t.String({ description: 'ISO 8601 instant; mail received after it counts. Default: now' })),
      timeout_seconds: t.Optional(t.Integer({ minimum: 1, maximum: MAX_WAIT_SECONDS, description: `default 30, at most ${MAX_WAIT_SECONDS}` })),
    }),
    output: t.Object({
      emails: t.Array(Summary, { description: 'newest first; empty when the wait timed out' }),
      timed_out: t.Boolean(),
      next_since: t.String({ format: 'date-time', description: 'pass as since on the next call' }),
    }),
    handle: async ({ ctx, auth, signal }, args) => {
      const since = args.since ? parseTimestamp('since', args.since) : new Date()
      const address = auth.boundAddress ?? args.address?.trim().toLowerCase()
      const read = () =>
        listEmails(ctx.sql, auth.orgId, { limit: TOOL_PAGE, after: null }, { since, direction: 'inbound', addresses: address ? [address] : [] })
      // as GET /v1/emails?wait= does it: woken by mail of this address only, when it has one
      const { rows } = await pollMail(
        mailEvents(ctx),
        { orgId: auth.orgId, address, ms: (args.timeout_seconds ?? 30) * 1000, signal },
        read,
        r => r.rows.length > 0,
      )
      if (!rows.length) return { emails: [], timed_out: true, next_since: since.toISOString() }
      const emails = rows.slice(0, TOOL_PAGE).map(presentSummary)
      return { emails, timed_out: false, next_since: emails[0]!.received_at }
    },
  }),
  operation({
    name: 'get_email',
    method: 'GET',
    path: '/v1/emails/:id',
    tag: 'Emails',
    summary: 'One message: headers, bodies, attachments, authentication verdicts',
    params: Id(),
    resource: 'email',
    mcp: {
      title: 'Read an email',
      description:
        'One message with its text, HTML, headers and authentication verdicts. Attachments come as short-lived download URLs, never as bytes. ' +
        'Its email_id comes from list_emails, search_emails or wait_for_email.',
      // signed download links for the attachments and the raw message (none for a connection key), instead of their metadata
      output: EmailWithLinks,
      present: ({ ctx, auth }, email: ReturnType<typeof presentEmail>) => withLinks(ctx, auth.orgId, email, auth.method !== 'connection'),
    },
    output: Email,
    graphql: { field: 'email', type: 'Email' },
    // a connection key reads only the mail of its address; another message is not_found
    handle: async ({ ctx, auth }, { id }) => presentEmail(await getEmail(ctx.sql, auth.orgId, id, auth.boundAddress)),
  }),
  operation({
    name: 'discard_email_content',
    method: 'POST',
    path: '/v1/emails/:id/discard',
    tag: 'Emails',
    summary: 'Discard the stored content of a message (irreversible; needs the opt-in)',
    params: Id(),
    resource: 'email',
    mcp: false,
    output: t.Object({ id: t.String(), content_discarded_at: t.String({ format: 'date-time' }) }),
    handle: ({ ctx, auth }, { id }) => discardContent(ctx.sql, auth.orgId, id),
  }),
  listOperation({
    name: 'list_threads',
    method: 'GET',
    path: '/v1/threads',
    tag: 'Threads',
    summary: 'List threads, newest first',
    description: "A thread's labels are the union of its messages'; label= finds the threads whose messages carry every one given.",
    input: t.Object({ label: LabelFilter }),
    mcp: { description: 'Conversations, most recent first; label (unread, a custom label) keeps those whose messages carry it.' },
    graphql: {
      field: 'threads',
      type: 'Thread',
      description: 'Conversations, newest first (as GET /v1/threads). Not for connection keys.',
      args: { label: '[String!]' },
    },
    list: {
      item: Thread,
      scope: (_call, q) => `threads?${JSON.stringify(labelsOf(q.label))}`,
      fetch: ({ ctx, auth }, q, page) => listThreads(ctx.sql, auth.orgId, page, labelsOf(q.label)),
      present: presentThread,
    },
  }),
  operation({
    name: 'get_thread',
    method: 'GET',
    path: '/v1/threads/:id',
    tag: 'Threads',
    summary: 'A thread with its messages, oldest first',
    params: Id('the thread'),
    resource: 'thread',
    mcp: { description: 'A conversation with its messages, oldest first (without bodies; read each with get_email).' },
    output: t.Composite([Thread, t.Object({ emails: t.Array(Summary) })]),
    // GraphQL's Thread pages its emails itself (graphql/mail.ts)
    graphql: { field: 'thread', type: 'Thread' },
    handle: ({ ctx, auth }, { id }) => getThread(ctx.sql, auth.orgId, id),
  }),
  listOperation({
    name: 'search_emails',
    method: 'GET',
    path: '/v1/search',
    tag: 'Search',
    summary: 'Search mail by subject, sender and text, newest first',
    description: 'Full-text search by words (no stemming). 504 search_timeout past a 3-second budget.',
    input: t.Object({
      q: t.String({ minLength: 1, maxLength: 200, description: 'words to find in subject, sender or body, all of them; also "a phrase", `or`, `-word`' }),
    }),
    mcp: {
      title: 'Search emails',
      description: 'Finds mail whose subject, sender or text contains the query, newest first.',
      rename: { q: 'query' },
    },
    list: {
      item: Summary,
      scope: () => 'search',
      fetch: ({ ctx, auth }, { q }, page) => searchEmails(ctx.sql, auth.orgId, q, page),
      present: presentSummary,
    },
  }),
]
