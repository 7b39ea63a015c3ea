/**
 * The mail routes still written by hand: the raw and attachment downloads (bytes with their own
 * headers, allowed by a signed token as well as by a credential). The other mail reads are
 * declared in operations.ts.
 */
import type { TObject } from '@sinclair/typebox'
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticateRequest } from '../http/auth'
import { errors } from '../errors'
import { IdParams } from '../http/schema'
import { attachmentContents } from '../mail/inbound/parse'
import { verifyDownloadToken } from './download-token'
import { tarGz } from './tar'
import { rawMessage } from '../mail/email-queries'

/** What a download takes: the path's parameters and the signed token, documented with both ways in. */
const download = <P extends TObject>(summary: string, params: P) => ({
  params,
  query: t.Object({ token: t.Optional(t.String({ maxLength: 1000 })) }),
  detail: {
    summary,
    description: 'Authenticate with a bearer API key, or with the signed `token` query parameter of a webhook payload (valid 24 hours).',
    security: [{ bearer: [] }, { downloadToken: [] }] as Record<string, string[]>[],
  },
})

/** The headers of a file handed over as an attachment named `filename`, kept by no shared cache. */
const fileHeaders = (type: string, filename: string) => ({
  'content-type': type,
  'content-disposition': `attachment; filename="${filename}"`,
  'cache-control': 'private, no-store',
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
        return new Response(await rawMessage(ctx.sql, orgId, params.id), { headers: fileHeaders('message/rfc822', `${params.id}.eml`) })
      },
      download('The exact bytes of a message (RFC 5322), trace header included', IdParams),
    )
    .get(
      '/:id/attachments.tar.gz',
      async ({ params, query, request, set, server }) => {
        const orgId = await downloadOrg(params.id, query.token, request, set, server as never)
        const files = await attachmentContents(await rawMessage(ctx.sql, orgId, params.id))
        return new Response(tarGz(files.map(f => ({ name: f.filename, content: f.content }))), {
          headers: fileHeaders('application/gzip', `${params.id}-attachments.tar.gz`),
        })
      },
      download('The attachments of a message as a tar.gz', IdParams),
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
        const type = /^[\w.+-]+\/[\w.+-]+$/.test(file.contentType) ? file.contentType : 'application/octet-stream'
        return new Response(file.content, { headers: { ...fileHeaders(type, name), 'x-content-type-options': 'nosniff' } })
      },
      download(
        'One attachment of a message, by index',
        t.Object({
          id: t.String({ format: 'uuid' }),
          index: t.String({ maxLength: 100, description: 'the attachment index of the message (0, 1, ...)' }),
        }),
      ),
    )

  return downloads
}
