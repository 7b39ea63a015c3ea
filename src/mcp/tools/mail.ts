/**
 * Mail reading tools written by hand: list_emails and `wait_for_email`, the long-poll of
 * GET /v1/emails?wait (each with arguments of its own), search_emails (its argument is `query`,
 * REST's `q`) and get_email. The thread tools are declared in emails/operations.ts.
 *
 * Attachments are never inlined: get_email lists each with a download URL signed for
 * MCP_DOWNLOAD_TTL_SECONDS, which any HTTP client can fetch without a credential, so bytes never
 * travel through a model's context.
 */
import { Type } from '@sinclair/typebox'
import type { AppContext } from '../../context'
import { signDownloadToken } from '../../emails/download-token'
import { Email, MAX_WAIT_SECONDS, Summary } from '../../emails/model'
import { getEmail, listEmails, presentEmail, presentSummary, searchEmails } from '../../emails/service'
import { parseTimestamp } from '../../http/timestamps'
import { mailEvents, pollMail } from '../../events'
import { PageInput, PageOf, TOOL_PAGE, toolPage } from '../schema'
import { READ, tool } from '../tool'

/** Long enough to hand a URL to a download step, short enough that a leaked transcript goes stale. */
export const MCP_DOWNLOAD_TTL_SECONDS = 15 * 60

const Uuid = (description: string) => Type.String({ format: 'uuid', description })
const Since = Type.String({ description: 'ISO 8601 instant with Z or an offset; only mail received after it' })

const AttachmentLink = Type.Object({
  index: Type.Integer(),
  filename: Type.Union([Type.String(), Type.Null()]),
  content_type: Type.String(),
  size_bytes: Type.Integer(),
  download_url: Type.String({ description: `GET it without credentials; valid ${MCP_DOWNLOAD_TTL_SECONDS / 60} minutes` }),
})
const { attachments: _bytes, ...emailFields } = Email.properties
const EmailWithLinks = Type.Object({
  ...emailFields,
  attachments: Type.Array(AttachmentLink),
  raw_url: Type.Union([Type.String(), Type.Null()], { description: 'the exact RFC 5322 bytes; null for connection keys, which may not download raw mail' }),
  links_expire_at: Type.String({ format: 'date-time' }),
})

function withLinks(ctx: AppContext, orgId: string, email: ReturnType<typeof presentEmail>, raw: boolean) {
  const now = Date.now()
  const token = signDownloadToken(ctx.keys, email.id, orgId, now, MCP_DOWNLOAD_TTL_SECONDS)
  const base = `${ctx.config.PUBLIC_URL}/v1/emails/${email.id}`
  return {
    ...email,
    attachments: email.attachments.map(a => ({
      index: a.index,
      filename: a.filename,
      content_type: a.content_type,
      size_bytes: a.size_bytes,
      download_url: `${base}/attachments/${a.index}?token=${token}`,
    })),
    raw_url: raw ? `${base}/raw?token=${token}` : null,
    links_expire_at: new Date(now + MCP_DOWNLOAD_TTL_SECONDS * 1000).toISOString(),
  }
}

export const mailTools = [
  tool({
    name: 'list_emails',
    title: 'List emails',
    description: 'Received and sent mail, newest first, without bodies. Filter by direction, thread or time; read one with get_email.',
    input: Type.Object({
      ...PageInput,
      direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')])),
      thread_id: Type.Optional(Uuid('only this thread')),
      since: Type.Optional(Since),
    }),
    output: PageOf(Summary),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/emails' },
    handle: async ({ ctx, auth }, args) => {
      const filters = {
        since: args.since ? parseTimestamp('since', args.since) : null,
        direction: args.direction,
        threadId: args.thread_id,
        addresses: auth.boundAddress ? [auth.boundAddress] : [],
      }
      return toolPage(ctx, 'emails', args, page => listEmails(ctx.sql, auth.orgId, page, filters), presentSummary)
    },
  }),
  tool({
    name: 'search_emails',
    title: 'Search emails',
    description: 'Finds mail whose subject, sender or text contains the query, newest first.',
    input: Type.Object({ ...PageInput, query: Type.String({ minLength: 1, maxLength: 200 }) }),
    output: PageOf(Summary),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/search' },
    handle: async ({ ctx, auth }, args) => {
      return toolPage(ctx, 'search', args, page => searchEmails(ctx.sql, auth.orgId, args.query, page), presentSummary)
    },
  }),
  tool({
    name: 'get_email',
    title: 'Read an email',
    description: 'One message with its text, HTML, headers and authentication verdicts. Attachments come as short-lived download URLs, never as bytes.',
    input: Type.Object({ email_id: Uuid('from list_emails, search_emails or wait_for_email') }),
    output: EmailWithLinks,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/emails/:id' },
    handle: async ({ ctx, auth }, args) =>
      withLinks(ctx, auth.orgId, presentEmail(await getEmail(ctx.sql, auth.orgId, args.email_id, auth.boundAddress)), auth.method !== 'connection'),
  }),
  tool({
    name: 'wait_for_email',
    title: 'Wait for an email',
    description:
      `Blocks until mail arrives for an address (or any address of the organization), or until timeout_seconds (at most ${MAX_WAIT_SECONDS}) pass. ` +
      'Pass the returned next_since as since on the next call so nothing is missed between calls.',
    input: Type.Object({
      address: Type.Optional(
        Type.String({
          maxLength: 320,
          description: 'the receiving address; omitted: any address of the organization (a connection key always waits for its own)',
        }),
      ),
      since: Type.Optional(Type.String({ description: 'ISO 8601 instant; mail received after it counts. Default: now' })),
      timeout_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WAIT_SECONDS, description: `default 30, at most ${MAX_WAIT_SECONDS}` })),
    }),
    output: Type.Object({
      emails: Type.Array(Summary, { description: 'newest first; empty when the wait timed out' }),
      timed_out: Type.Boolean(),
      next_since: Type.String({ format: 'date-time', description: 'pass as since on the next call' }),
    }),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/emails' },
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
]
