/**
 * Mail reads as operations (src/http/operation.ts): one message, its content discarded, threads,
 * and search. Still written by hand (routes.ts): GET /v1/emails, whose `wait` long-polls and
 * whose filters differ on each surface (the MCP tools list_emails and wait_for_email, the GraphQL
 * field emails), and the raw and attachment downloads, which answer bytes with their own headers
 * and also take a signed token instead of a credential. The MCP tools get_email (signed download
 * links instead of attachment metadata) and search_emails (its argument is `query`, REST's `q`)
 * stay in mcp/tools/mail.ts.
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Email, Summary, Thread } from './model'
import { discardContent, getEmail, getThread, listThreads, presentEmail, presentSummary, presentThread, searchEmails } from './service'

const Id = (description?: string) => ({ id: t.String({ format: 'uuid', ...(description && { description }) }) })

export const emailOperations = [
  operation({
    name: 'get_email',
    method: 'GET',
    path: '/v1/emails/:id',
    tag: 'Emails',
    summary: 'One message: headers, bodies, attachments, authentication verdicts',
    params: Id(),
    resource: 'email',
    // the tool answers signed download links for the attachments and the raw message: mcp/tools/mail.ts
    mcp: false,
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
    mcp: { description: 'Conversations, most recent first.' },
    graphql: { field: 'threads', type: 'Thread', description: 'Conversations, newest first (as GET /v1/threads). Not for connection keys.' },
    list: {
      item: Thread,
      scope: () => 'threads',
      fetch: ({ ctx, auth }, _args, page) => listThreads(ctx.sql, auth.orgId, page),
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
    // the tool's argument is `query`: mcp/tools/mail.ts
    mcp: false,
    list: {
      item: Summary,
      scope: () => 'search',
      fetch: ({ ctx, auth }, { q }, page) => searchEmails(ctx.sql, auth.orgId, q, page),
      present: presentSummary,
    },
  }),
]
