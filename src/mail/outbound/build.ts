/**
 * Builds the RFC 5322 bytes of an outbound message with mimetext: multipart/alternative for
 * text + html, multipart/related for inline parts (those with a content id), multipart/mixed
 * for attachments and the JSON part. Header values are encoded and folded by encoding.ts,
 * bodies are quoted-printable unless they are plain 7-bit, and every line ends in CRLF.
 */
import { randomBytes } from 'node:crypto'
import { createMimeMessage, type MIMEMessage, type MIMEMessageContent } from 'mimetext'
import {
  addressList,
  assertSingleLine,
  fileParameter,
  isSevenBitSafe,
  messageIdList,
  quotedPrintable,
  rfc5322Date,
  unstructured,
  wrappedBase64,
} from './encoding'

export interface Attachment {
  filename: string
  content_type: string
  content_base64: string
  /** makes the part inline (multipart/related), referenced from the html as cid:<content_id> */
  content_id?: string
}

export interface OutboundMessage {
  from: { address: string; name?: string }
  to: string[]
  cc: string[]
  /** envelope only, never in headers */
  bcc: string[]
  replyTo?: string[]
  subject: string
  text: string
  html?: string
  attachments?: Attachment[]
  /** already allow-listed and CR/LF-free by the caller */
  headers?: Record<string, string>
  /** '<id@domain>' */
  messageId: string
  inReplyTo?: string
  references?: string[]
  date: Date
  /** an extra application/json part, e.g. { filename: 'interaction.json', json: {...} } */
  jsonPart?: { filename: string; json: unknown }
}

/** Headers this module writes itself; a custom header may not replace or repeat them. */
const RESERVED = new Set([
  'from',
  'sender',
  'reply-to',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'message-id',
  'in-reply-to',
  'references',
  'mime-version',
  'dkim-signature',
  'received',
  'return-path',
])

const CONTENT_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i

/**
 * mimetext validates and renders the standard headers itself (always base64 words, no folding,
 * a single Reply-To); we hand it finished values instead.
 */
function setHeader(msg: MIMEMessage, name: string, value: string) {
  const field = msg.headers.fields.find(f => f.name.toLowerCase() === name.toLowerCase())
  const dump = (v: unknown) => (typeof v === 'string' ? v : '')
  if (field) Object.assign(field, { value, dump, validate: undefined })
  else msg.headers.setCustom({ name, value, dump, custom: true })
}

/** Normalizes line breaks of a body to LF (CRLF is restored for the whole message at the end). */
const lf = (text: string) => text.replace(/\r\n?/g, '\n')

function addBody(msg: MIMEMessage, contentType: 'text/plain' | 'text/html', text: string) {
  const body = lf(text)
  const plain = isSevenBitSafe(body)
  msg.addMessage({ contentType, charset: 'UTF-8', encoding: plain ? '7bit' : 'quoted-printable', data: plain ? body : quotedPrintable(body) })
}

function addPart(msg: MIMEMessage, part: { filename: string; contentType: string; data: Buffer; contentId?: string }) {
  if (!CONTENT_TYPE.test(part.contentType))
    throw new Error(`attachment ${JSON.stringify(part.filename)}: content type ${JSON.stringify(part.contentType)} is not type/subtype`)
  const inline = part.contentId !== undefined
  if (inline) assertSingleLine('content_id', part.contentId!)
  // the file name goes in below, encoded; mimetext would quote it raw
  const content: MIMEMessageContent = msg.addAttachment({
    filename: 'file',
    contentType: part.contentType,
    data: wrappedBase64(part.data),
    encoding: 'base64',
    inline,
    headers: inline ? { 'Content-ID': `<${part.contentId!.replace(/^<|>$/g, '')}>` } : {},
  })
  content.setHeader('Content-Type', `${part.contentType};\n ${fileParameter('name', part.filename)}`)
  content.setHeader('Content-Disposition', `${inline ? 'inline' : 'attachment'};\n ${fileParameter('filename', part.filename)}`)
  // mimetext tells attachments from inline parts by searching the disposition text, which a
  // file name like "inline.png" would fool
  content.isAttachment = () => !inline
  content.isInlineAttachment = () => inline
}

/** RFC 5322 with CRLF line endings only; Bcc never appears in it. */
export function buildMime(m: OutboundMessage): string {
  const msg = createMimeMessage()
  // unpredictable boundaries, so no content can contain one; mimetext does not quote them, so token characters only
  const boundary = () => `part-${randomBytes(12).toString('hex')}`
  msg.boundaries = { mixed: boundary(), alt: boundary(), related: boundary() }

  setHeader(msg, 'Date', rfc5322Date(m.date))
  setHeader(msg, 'From', addressList('From', [{ address: m.from.address, name: m.from.name }]))
  if (m.replyTo?.length)
    setHeader(
      msg,
      'Reply-To',
      addressList(
        'Reply-To',
        m.replyTo.map(address => ({ address })),
      ),
    )
  if (m.to.length)
    setHeader(
      msg,
      'To',
      addressList(
        'To',
        m.to.map(address => ({ address })),
      ),
    )
  if (m.cc.length)
    setHeader(
      msg,
      'Cc',
      addressList(
        'Cc',
        m.cc.map(address => ({ address })),
      ),
    )
  setHeader(msg, 'Message-ID', messageIdList('Message-ID', [m.messageId]))
  setHeader(msg, 'Subject', unstructured('Subject', m.subject))
  if (m.inReplyTo) setHeader(msg, 'In-Reply-To', messageIdList('In-Reply-To', [m.inReplyTo]))
  if (m.references?.length) setHeader(msg, 'References', messageIdList('References', m.references))
  for (const [name, value] of Object.entries(m.headers ?? {})) {
    if (!/^[!-9;-~]+$/.test(name)) throw new Error(`header ${JSON.stringify(name)}: not a header field name`)
    if (RESERVED.has(name.toLowerCase()) || name.toLowerCase().startsWith('content-')) throw new Error(`header ${name}: set by the message builder`)
    setHeader(msg, name, unstructured(name, value))
  }

  addBody(msg, 'text/plain', m.text)
  if (m.html !== undefined) addBody(msg, 'text/html', m.html)
  for (const a of m.attachments ?? []) {
    addPart(msg, { filename: a.filename, contentType: a.content_type, data: Buffer.from(a.content_base64, 'base64'), contentId: a.content_id })
  }
  if (m.jsonPart) addPart(msg, { filename: m.jsonPart.filename, contentType: 'application/json', data: Buffer.from(JSON.stringify(m.jsonPart.json)) })

  // mimetext ends lines with the platform's EOL (LF here); SMTP and DKIM need CRLF everywhere
  return msg.asRaw().replace(/\r?\n/g, '\r\n') + '\r\n'
}
