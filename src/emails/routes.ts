/**
 * The mail routes still written by hand: the raw and attachment downloads (bytes with their own
 * headers, allowed by a signed token as well as by a credential) and GET /v1/emails, whose `wait`
 * long-polls and whose filters the MCP tools and the GraphQL field take differently. The other
 * mail reads are declared in operations.ts.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated, authenticateRequest } from '../http/auth'
import { Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { errors } from '../errors'
import { IdParams, OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { attachmentContents } from '../mail/inbound/parse'
import { EMAIL_EVENT_TYPES } from '../mail/inbound/classify'
import { SENT_EVENT_TYPES } from '../mail/store'
import { getInbox } from '../inboxes/service'
import { ADDRESS } from '../http/schema'
import { verifyDownloadToken } from './download-token'
import { tarGz } from './tar'
import { listEmails, presentSummary, rawMessage } from './service'
import { mailEvents, pollMail } from '../events'
import { MAX_WAIT_SECONDS, Summary } from './model'

const downloadDetail = (summary: string) => ({
  summary,
  description: 'Authenticate with a bearer API key, or with the signed `token` query parameter of a webhook payload (valid 24 hours).',
  security: [{ bearer: [] }, { downloadToken: [] }] as Record<string, string[]>[],
})

export function emailRoutes(ctx: AppContext) {
  /** A download is allowed by a valid token for this email, or by the bearer credential of its organization. */
  async function downloadOrg(
    id: string,
    token: string | undefined,
    request: Request,
    set: { headers: Record<string, string | number | string[]> },
    server: never,
  ) {
    if (token !== undefined) return verifyDownloadToken(ctx.keys, token, id)
    return (await authenticateRequest(ctx, request, set, server)).orgId
  }

  const downloads = new Elysia({ prefix: '/v1/emails', tags: ['Emails'] })
    .get(
      '/:id/raw',
      async ({ params, query, request, set, server }) => {
        const orgId = await downloadOrg(params.id, query.token, request, set, server as never)
        return new Response(await rawMessage(ctx.sql, orgId, params.id), {
          headers: { 'content-type': 'message/rfc822', 'content-disposition': `attachment; filename="${params.id}.eml"`, 'cache-control': 'private, no-store' },
        })
      },
      {
        params: IdParams,
        query: t.Object({ token: t.Optional(t.String({ maxLength: 1000 })) }),
        detail: downloadDetail('The exact bytes of a message (RFC 5322), trace header included'),
      },
    )
    .get(
      '/:id/attachments.tar.gz',
      async ({ params, query, request, set, server }) => {
        const orgId = await downloadOrg(params.id, query.token, request, set, server as never)
        const files = await attachmentContents(await rawMessage(ctx.sql, orgId, params.id))
        return new Response(tarGz(files.map(f => ({ name: f.filename, content: f.content }))), {
          headers: {
            'content-type': 'application/gzip',
            'content-disposition': `attachment; filename="${params.id}-attachments.tar.gz"`,
            'cache-control': 'private, no-store',
          },
        })
      },
      {
        params: IdParams,
        query: t.Object({ token: t.Optional(t.String({ maxLength: 1000 })) }),
        detail: downloadDetail('The attachments of a message as a tar.gz'),
      },
    )
    .get(
      '/:id/attachments/:index',
      async ({ params, query, request, set, server }) => {
        const orgId = await downloadOrg(params.id, query.token, request, set, server as never)
        // read after the credential, so that a caller without one learns nothing from a 400
        const index = /^\d{1,4}$/.test(params.index) ? Number(params.index) : -1
        const file = (await attachmentContents(await rawMessage(ctx.sql, orgId, params.id)))[index]
        if (!file) throw errors.notFound('attachment')
        // never rendered by the browser as a page of ours, whatever type the sender claimed
        const name = (file.filename ?? `attachment-${index}`).replace(/["\\\r\n]/g, '_')
        return new Response(file.content, {
          headers: {
            'content-type': /^[\w.+-]+\/[\w.+-]+$/.test(file.contentType) ? file.contentType : 'application/octet-stream',
            'content-disposition': `attachment; filename="${name}"`,
            'x-content-type-options': 'nosniff',
            'cache-control': 'private, no-store',
          },
        })
      },
      {
        params: t.Object({
          id: t.String({ format: 'uuid' }),
          index: t.String({ maxLength: 100, description: 'the attachment index of the message (0, 1, ...)' }),
        }),
        query: t.Object({ token: t.Optional(t.String({ maxLength: 1000 })) }),
        detail: downloadDetail('One attachment of a message, by index'),
      },
    )

  const reads = new Elysia({ prefix: '/v1' }).use(authenticated(ctx)).get(
    '/emails',
    async ({ auth, query, request }) => {
      const inbox = query.inbox_id ? await getInbox(ctx.sql, auth.orgId, query.inbox_id) : undefined
      const filters = {
        since: query.since ? parseTimestamp('since', query.since) : null,
        direction: query.direction,
        threadId: query.thread_id,
        eventType: query.event_type,
        addresses: [auth.boundAddress, inbox?.address, query.address?.toLowerCase()].filter(a => a !== undefined),
      }
      // A cursor continues the list it came from: it is signed for these filters and refused with others.
      const scope = `emails?${JSON.stringify([query.since ?? null, query.direction ?? null, query.thread_id ?? null, query.event_type ?? null, query.inbox_id ?? null, query.address?.toLowerCase() ?? null])}`
      const page = cursors(ctx).request(scope, query)
      const read = () => listEmails(ctx.sql, auth.orgId, page, filters)
      // A long-poll of an address (a connection key's, an inbox's, address=) wakes for that address's mail only.
      const result =
        query.wait && !page.after
          ? await pollMail(
              mailEvents(ctx),
              { orgId: auth.orgId, address: filters.addresses[0], ms: query.wait * 1000, signal: request.signal },
              read,
              r => r.rows.length > 0,
            )
          : await read()
      return cursors(ctx).page(scope, result.rows, page, result.total, presentSummary)
    },
    {
      query: t.Object({
        ...pageQuery(),
        since: t.Optional(Timestamp('only mail received after this instant')),
        wait: t.Optional(
          t.Integer({
            minimum: 0,
            maximum: MAX_WAIT_SECONDS,
            description: `long-poll: when nothing matches, wait up to this many seconds (max ${MAX_WAIT_SECONDS}) for new mail`,
          }),
        ),
        direction: t.Optional(t.Union([t.Literal('inbound'), t.Literal('outbound')])),
        thread_id: t.Optional(t.String({ format: 'uuid' })),
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
      }),
      response: { 200: Paged(Summary) },
      detail: {
        tags: ['Emails'],
        summary: 'List mail, newest first; long-poll with wait',
        description: 'The filters combine (all must hold). A cursor continues the list it came from: with other filters it is a validation_error.',
      },
    },
  )

  return new Elysia().use(downloads).use(reads)
}
