/** Parses a raw message with postal-mime into the fields we store and serve. */
import PostalMime from 'postal-mime'

export interface Mailbox {
  address: string
  name: string
}

export interface AttachmentMeta {
  /** position in the message; the tar.gz and webhooks refer to attachments by it */
  index: number
  filename: string | null
  content_type: string
  size_bytes: number
  content_id: string | null
  disposition: string | null
}

export interface ParsedMail {
  from: Mailbox | null
  to: Mailbox[]
  cc: Mailbox[]
  replyTo: Mailbox[]
  subject: string
  messageId: string | null
  inReplyTo: string | null
  references: string[]
  date: Date | null
  text: string | null
  html: string | null
  headers: { name: string; value: string }[]
  attachments: AttachmentMeta[]
  /** the top-level Content-Type, lowercased, with parameters */
  contentType: string
}

type PostalAddress = { address?: string; name?: string; group?: PostalAddress[] }

function mailboxes(list: PostalAddress[] | undefined): Mailbox[] {
  return (list ?? []).flatMap(a => (a.group ? mailboxes(a.group) : a.address ? [{ address: a.address.toLowerCase(), name: a.name ?? '' }] : []))
}

const MESSAGE_ID = /<[^<>\s]+>/g

/** The message ids in a References or In-Reply-To value, in order. */
export function messageIds(value: string | undefined | null): string[] {
  return value?.match(MESSAGE_ID) ?? []
}

/**
 * PostgreSQL's text and jsonb cannot hold U+0000, which a sender can put into any decoded
 * field (`=00` in a quoted-printable body, say), and a message that cannot be stored would be
 * refused with 451 on every retry: it is dropped from the parsed fields. The raw bytes keep it.
 */
function withoutNul<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\0') ? value.replaceAll('\0', '') : value) as T
  if (Array.isArray(value)) return value.map(withoutNul) as T
  if (value && typeof value === 'object' && !(value instanceof Date)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutNul(v)])) as T
  return value
}

export async function parseMail(raw: Uint8Array): Promise<ParsedMail> {
  const email = await PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' })
  const headers = email.headers.map(h => ({ name: h.key, value: h.value }))
  const date = email.date ? new Date(email.date) : null
  return withoutNul({
    from: mailboxes(email.from ? [email.from as PostalAddress] : [])[0] ?? null,
    to: mailboxes(email.to as PostalAddress[]),
    cc: mailboxes(email.cc as PostalAddress[]),
    replyTo: mailboxes(email.replyTo as PostalAddress[]),
    subject: email.subject ?? '',
    messageId: messageIds(email.messageId)[0] ?? null,
    inReplyTo: messageIds(email.inReplyTo)[0] ?? null,
    references: messageIds(email.references),
    date: date && !Number.isNaN(date.getTime()) ? date : null,
    text: email.text ?? null,
    html: email.html ?? null,
    headers,
    attachments: email.attachments.map((a, index) => ({
      index,
      filename: a.filename ?? null,
      content_type: a.mimeType,
      size_bytes: (a.content as ArrayBuffer).byteLength,
      content_id: a.contentId ?? null,
      disposition: a.disposition ?? null,
    })),
    contentType: (headers.find(h => h.name === 'content-type')?.value ?? 'text/plain').toLowerCase(),
  })
}

/** The attachments with their bytes, for downloads (parsed again from the stored raw message). */
export async function attachmentContents(raw: Uint8Array): Promise<{ filename: string | null; contentType: string; content: Uint8Array }[]> {
  const email = await PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' })
  return email.attachments.map(a => ({ filename: a.filename ?? null, contentType: a.mimeType, content: new Uint8Array(a.content as ArrayBuffer) }))
}
