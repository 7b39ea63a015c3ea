/**
 * The reply without its quotes: the new content of a received message, without the quoted
 * earlier messages, the "On … wrote:" line (or Outlook's From:/Sent: block) and a trailing
 * signature. Computed once per message at ingest and stored (`extracted_text`,
 * `extracted_html`, sql/0043); the full bodies stay as they are. docs/extracted-text.md says
 * what it does with each kind of reply.
 *
 * Two libraries, one per kind of body: email-reply-parser (Crisp's, maintained, about ten
 * languages, signatures such as `-- ` and "Sent from my iPhone"; patched to keep closings such
 * as "Kind regards," and the name under them) reads the text part; @u22n/mailtools (cheerio) cuts the HTML part at its quote elements (gmail_quote,
 * blockquote, moz-cite-prefix, Yahoo's, Outlook's border-top block; patched for Outlook on the
 * web's rule and #divRplyFwdMsg, patches/) and its signature elements. A message with HTML only
 * gets the text of its extracted HTML (html-to-text).
 */
import { parseMessage } from '@u22n/mailtools'
import EmailReplyParser from 'email-reply-parser'
import { convert } from 'html-to-text'
import { log } from '../../log'
import { type Extracted, NOT_EXTRACTED } from './threads'
import type { ParsedMail } from './parse'

/**
 * Bodies longer than this are not read: the libraries' cost grows with the body, and a reply
 * this long is a document, not a reply. Its extracted fields stay null.
 */
const MAX_BODY_CHARS = 512 * 1024

const replies = new EmailReplyParser()

/** The text of extracted HTML: line breaks for blocks (at most one empty line in a row), no link targets or images. */
const htmlText = (html: string) =>
  convert(html, {
    wordwrap: false,
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
    ],
  })
    .replace(/\n{3,}/g, '\n\n')
    .trim()

/**
 * The HTML without its quotes and signature elements; '' when nothing else is left (mailtools
 * then answers the whole message, and marks it by leaving didFindQuotation unset).
 */
async function extractHtml(html: string): Promise<string> {
  const { parsedMessageHtml, didFindQuotation } = await parseMessage(html, { cleanQuotations: true, cleanSignatures: true })
  return didFindQuotation === null ? '' : parsedMessageHtml
}

/** The new content of a received message's bodies (see the module's comment); null fields for bodies it cannot read. */
export async function extractReply(mail: Pick<ParsedMail, 'text' | 'html'>): Promise<Extracted> {
  const text = mail.text && mail.text.length <= MAX_BODY_CHARS ? mail.text : null
  const html = mail.html && mail.html.length <= MAX_BODY_CHARS ? mail.html : null
  try {
    if (text !== null) {
      const email = replies.read(text)
      // A text part with neither quote nor signature is all new, and so is its HTML form: the HTML
      // is kept whole, which spares the HTML library its cost (several times postal-mime's parse)
      // on the mail that is no reply (first messages, notifications, newsletters), and keeps it
      // from cutting a newsletter's element whose class merely contains "quote".
      const cut = email.getFragments().some(f => f.isQuoted() || f.isSignature())
      return { text: email.getVisibleText().trim(), html: html === null ? null : cut ? await extractHtml(html) : html }
    }
    // a message with HTML only (or a text part too large to read): the text of its new HTML
    const extractedHtml = html === null ? null : await extractHtml(html)
    return { text: extractedHtml === null || mail.text ? null : htmlText(extractedHtml), html: extractedHtml }
  } catch (error) {
    // the full bodies are stored either way; a message is never refused for this
    log.warn('reply extraction failed', { error: String(error) })
    return NOT_EXTRACTED
  }
}
