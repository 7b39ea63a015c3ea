/**
 * The encodings an outbound message needs and mimetext leaves to its caller: RFC 2047 encoded
 * words and folding for header values, RFC 2231 parameters for file names, quoted-printable
 * and wrapped base64 for bodies. Output uses bare LF like mimetext; build.ts turns every line
 * ending into CRLF at the end.
 */

/** Longest line we write; RFC 5322 allows 998 but recommends 78. */
const FOLD_AT = 78
/** 45 bytes of UTF-8 become 60 base64 characters: with `=?UTF-8?B?` and `?=` a word stays under the 75 of RFC 2047. */
const WORD_BYTES = 45

const PLAIN_TEXT = /^[\x20-\x7e]*$/

export function assertSingleLine(what: string, value: string) {
  // Header injection: a line break in a value would start a header or the body of our choosing.
  if (/[\r\n\0]/.test(value)) throw new Error(`${what}: line breaks are not allowed in a header value`)
}

/** Splits text into encoded words, never inside a character (a code point stays in one word). */
function encodedWords(text: string): string[] {
  const words: string[] = []
  let chunk = ''
  let bytes = 0
  for (const ch of text) {
    const size = Buffer.byteLength(ch)
    if (bytes + size > WORD_BYTES && chunk) {
      words.push(chunk)
      chunk = ''
      bytes = 0
    }
    chunk += ch
    bytes += size
  }
  if (chunk || !words.length) words.push(chunk)
  return words.map(w => `=?UTF-8?B?${Buffer.from(w).toString('base64')}?=`)
}

/** Joins tokens with single spaces, folding (LF + space) before a token that would pass FOLD_AT. */
function foldTokens(tokens: string[], firstLineUsed: number): string {
  let out = ''
  let line = firstLineUsed
  for (const token of tokens) {
    if (!out) {
      out = token
      line += token.length
    } else if (line + 1 + token.length > FOLD_AT) {
      out += '\n ' + token
      line = 1 + token.length
    } else {
      out += ' ' + token
      line += 1 + token.length
    }
  }
  return out
}

/**
 * An unstructured header value (Subject, custom headers): kept readable when it is printable
 * ASCII, encoded words otherwise; folded either way. `name` counts toward the first line.
 */
export function unstructured(name: string, value: string): string {
  assertSingleLine(name, value)
  const used = name.length + 2
  // "=?" in plain text would be read as the start of an encoded word; a 900-character token cannot be folded
  const plain = PLAIN_TEXT.test(value) && !value.includes('=?') && value.split(' ').every(t => t.length < 900) && !/^ | $| {2}/.test(value)
  return plain ? foldTokens(value.split(' '), used) : foldTokens(encodedWords(value), used)
}

/** A display name as a phrase: a quoted string when it is ASCII, encoded words otherwise. */
function phrase(name: string): string {
  if (PLAIN_TEXT.test(name) && !name.includes('=?')) return `"${name.replace(/["\\]/g, '\\$&')}"`
  return encodedWords(name).join(' ')
}

export interface Address {
  address: string
  name?: string
}

/** An address list header value, one mailbox per line once it gets long. */
export function addressList(name: string, list: Address[]): string {
  const parts = list.map(a => {
    assertSingleLine(name, a.address)
    if (a.name !== undefined) assertSingleLine(name, a.name)
    if (/[<>\s,]/.test(a.address)) throw new Error(`${name}: ${JSON.stringify(a.address)} is not a plain address`)
    return a.name ? `${phrase(a.name)} <${a.address}>` : a.address
  })
  return foldTokens(
    parts.map((p, i) => (i < parts.length - 1 ? p + ',' : p)),
    name.length + 2,
  )
}

/** Message ids (`<id@domain>`) separated by folding whitespace. */
export function messageIdList(name: string, ids: string[]): string {
  for (const id of ids) {
    assertSingleLine(name, id)
    if (!/^<[^<>\s]+>$/.test(id)) throw new Error(`${name}: ${JSON.stringify(id)} is not a message id`)
  }
  return foldTokens(ids, name.length + 2)
}

/** RFC 2231 attr-char: a token character other than `*`, `'` and `%`. */
const ATTR_CHAR = /^[!#$&+.^`|~\w-]$/

/**
 * `filename` parameter(s): a quoted string for plain ASCII names, else RFC 2231 (UTF-8,
 * percent-encoded, split into continuations so no line passes FOLD_AT).
 */
export function fileParameter(param: 'name' | 'filename', value: string): string {
  assertSingleLine(param, value)
  if (PLAIN_TEXT.test(value) && value.length <= 60) return `${param}="${value.replace(/["\\]/g, '\\$&')}"`
  const encoded = [...Buffer.from(value)]
    .map(b => (ATTR_CHAR.test(String.fromCharCode(b)) ? String.fromCharCode(b) : '%' + b.toString(16).toUpperCase().padStart(2, '0')))
    .join('')
  const pieces: string[] = []
  let rest = `UTF-8''${encoded}`
  while (rest.length) {
    // never split a %XX escape
    let cut = Math.min(60, rest.length)
    const percent = rest.lastIndexOf('%', cut - 1)
    if (percent > cut - 3 && percent >= 0 && cut < rest.length) cut = percent
    pieces.push(rest.slice(0, cut))
    rest = rest.slice(cut)
  }
  if (pieces.length === 1) return `${param}*=${pieces[0]}`
  return pieces.map((p, i) => `${param}*${i}*=${p}`).join(';\n ')
}

/** Bodies that can go as they are: printable ASCII (and tabs), lines of at most 998 characters. */
export function isSevenBitSafe(text: string): boolean {
  return /^[\x09\x20-\x7e\n]*$/.test(text) && text.split('\n').every(l => l.length <= 998)
}

/** Quoted-printable (RFC 2045 6.7) of UTF-8 text with LF line breaks; lines of at most 76 characters. */
export function quotedPrintable(text: string): string {
  return text
    .split('\n')
    .map(line => {
      const bytes = Buffer.from(line)
      let out = ''
      let current = ''
      bytes.forEach((b, i) => {
        const last = i === bytes.length - 1
        const literal = (b >= 33 && b <= 126 && b !== 61) || ((b === 32 || b === 9) && !last)
        const token = literal ? String.fromCharCode(b) : '=' + b.toString(16).toUpperCase().padStart(2, '0')
        if (current.length + token.length > 75) {
          out += current + '=\n'
          current = ''
        }
        current += token
      })
      return out + current
    })
    .join('\n')
}

/** Base64 in lines of 76 characters (RFC 2045), from base64 of any line length. */
export function wrappedBase64(data: Buffer): string {
  return data.toString('base64').replace(/.{76}(?=.)/g, '$&\n')
}

/** `Tue, 01 Jul 2025 09:30:00 +0000` (RFC 5322 date-time, in UTC). */
export function rfc5322Date(date: Date): string {
  return date.toUTCString().replace('GMT', '+0000')
}
