/**
 * A message with signed download links, as the MCP tool get_email answers it: attachments are
 * never inlined, each comes with a URL signed for MCP_DOWNLOAD_TTL_SECONDS that any HTTP client
 * can fetch without a credential, so bytes never travel through a model's context.
 */
import { Type } from '@sinclair/typebox'
import type { AppContext } from '../context'
import { signDownloadToken } from './download-token'
import { Email } from './model'
import type { presentEmail } from './service'

/** Long enough to hand a URL to a download step, short enough that a leaked transcript goes stale. */
export const MCP_DOWNLOAD_TTL_SECONDS = 15 * 60

const AttachmentLink = Type.Object({
  index: Type.Integer(),
  filename: Type.Union([Type.String(), Type.Null()]),
  content_type: Type.String(),
  size_bytes: Type.Integer(),
  download_url: Type.String({ description: `GET it without credentials; valid ${MCP_DOWNLOAD_TTL_SECONDS / 60} minutes` }),
})
const { attachments: _bytes, ...emailFields } = Email.properties
export const EmailWithLinks = Type.Object({
  ...emailFields,
  attachments: Type.Array(AttachmentLink),
  raw_url: Type.Union([Type.String(), Type.Null()], { description: 'the exact RFC 5322 bytes; null for connection keys, which may not download raw mail' }),
  links_expire_at: Type.String({ format: 'date-time' }),
})

export function withLinks(ctx: AppContext, orgId: string, email: ReturnType<typeof presentEmail>, raw: boolean) {
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
