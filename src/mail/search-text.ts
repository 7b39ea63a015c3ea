/**
 * The words of stored mail and of searches, cut here by one tokenizer, not by PostgreSQL's
 * text-search parser. The store writes each message's words as a `tsvector` literal
 * (`searchVector`) and a search sends a `tsquery` literal (`searchQuery`); PostgreSQL only reads
 * them, which costs about a fifth of parsing the text itself (its parser took 0.45 ms of database
 * CPU for a 6.6 KB body, the literal 0.08 ms; see docs/benchmarks.md). One tokenizer on both
 * sides also means a query finds exactly the words a message was indexed under.
 *
 * A word is a run of letters and digits, lowercased; anything else separates words, as
 * PostgreSQL's 'simple' configuration does for plain words (no stemming, no stop words: mail
 * comes in every language). An address is indexed whole as well as by its words, so
 * `quinn@finder.example`, `quinn`, `finder` and `finder.example` all find it.
 *
 * The new content of a received message (its extracted text, without the quoted earlier
 * messages: mail/inbound/extract.ts) is indexed first after the sender, with weight A; the
 * whole body follows with the default weight D, so a search still finds words of the quotes,
 * and ranking by weight (`ts_rank`, or a `word:A` query) sets the reply's own words first. A
 * message with HTML only has no text body: its new content is then the only text indexed.
 */

/** The part of a body that is indexed: a huge message stays under the 1 MB limit of a tsvector. */
const MAX_TEXT_CHARS = 65_536
/** The largest position a tsvector holds; later words are all counted at it. */
const MAX_POSITION = 16_383
/** Longer runs (encoded data, hashes) are not words anyone searches for. */
const MAX_WORD_CHARS = 100

const ADDRESS = /^[^\s@"]+@[^\s@"]+\.[^\s@"]+$/

const NON_ASCII = /[^\x00-\x7f]/
const ASCII_WORDS = /[a-z0-9]+/g
const WORDS = /[\p{L}\p{N}\p{M}]+/gu
const WORD_START = /^[\p{L}\p{N}\p{M}]/u
const WORD_END = /[\p{L}\p{N}\p{M}]+$/u

/** The words of `text`, lowercased, in order (a run longer than MAX_WORD_CHARS is skipped). */
export function words(text: string): string[] {
  const lower = text.toLowerCase()
  const found = lower.match(NON_ASCII.test(lower) ? WORDS : ASCII_WORDS) ?? []
  for (let i = 0; i < found.length; i++) if (found[i]!.length > MAX_WORD_CHARS) return found.filter(w => w.length <= MAX_WORD_CHARS)
  return found
}

/** The body up to MAX_TEXT_CHARS, without a word the cut would split. */
function indexedText(text: string | null): string | null {
  if (!text || text.length <= MAX_TEXT_CHARS) return text
  const cut = text.slice(0, MAX_TEXT_CHARS)
  return WORD_START.test(text.slice(MAX_TEXT_CHARS, MAX_TEXT_CHARS + 2)) ? cut.replace(WORD_END, '') : cut
}

/** A lexeme as a tsvector or tsquery literal quotes it. */
const quote = (lexeme: string) => `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`

export interface SearchFields {
  /** the message's organization: its lexeme (`orgLexeme`) is in every vector */
  orgId: string
  subject: string | null
  fromName: string | null
  fromAddress: string | null
  text: string | null
  /** the new content of a received message, indexed with weight A */
  newText?: string | null
}

/**
 * The lexeme of an organization in the vectors of its messages, which a search asks for with its
 * words (sql/0049): the index intersects the two, so a search reads its own organization's
 * matches only. No query can spell it: a query's words are runs of letters and digits, and an
 * address has an @.
 */
export const orgLexeme = (orgId: string) => `org=${orgId}`

/**
 * The `tsvector` literal of a message: subject, sender (the address whole and by its words),
 * new content (weight A), body, and its organization's lexeme. Each word is listed once with its positions; PostgreSQL keeps up to 256 of them.
 */
export function searchVector(m: SearchFields, lexemes = messageLexemes(m)): string {
  return `${quote(orgLexeme(m.orgId))} ${lexemes}`
}

/**
 * The message's part of its `searchVector`, its organization's lexeme apart: the same for every
 * copy, so the inbound threads (mail/inbound/threads.ts) cut it once, beside the parse.
 */
export function messageLexemes(m: Omit<SearchFields, 'orgId'>): string {
  // a dictionary object of position arrays: on Bun the cheapest of the ways measured (a Map, or
  // one string per word grown at each position, cost up to half as much again)
  const positions: Record<string, (number | string)[]> = Object.create(null)
  let position = 0
  const addWords = (text: string | null | undefined, weight = '') => {
    if (!text) return
    const found = words(text)
    for (let i = 0; i < found.length; i++) {
      if (position < MAX_POSITION) position++
      const at = weight ? `${position}${weight}` : position
      const list = positions[found[i]!]
      if (list === undefined) positions[found[i]!] = [at]
      else list.push(at)
    }
  }
  addWords(m.subject)
  addWords(m.fromName)
  const address = m.fromAddress?.toLowerCase()
  if (address) {
    // the address whole, at the position of its first word
    positions[address] = [Math.min(position + 1, MAX_POSITION)]
    addWords(address)
  }
  addWords(indexedText(m.newText ?? null), 'A')
  addWords(indexedText(m.text))
  let literal = ''
  for (const lexeme in positions) literal += `${quote(lexeme)}:${positions[lexeme]!.join(',')} `
  return literal
}

/** One search term as a tsquery: a word, a phrase of words in order, or an address. */
function termQuery(term: string): string | null {
  const parts = words(term)
  if (!parts.length) return null
  const phrase = parts.length === 1 ? quote(parts[0]!) : `(${parts.map(quote).join(' <-> ')})`
  // an address is indexed whole where it is the sender, by its words where it is in the text
  return ADDRESS.test(term) ? `(${quote(term.toLowerCase())} | ${phrase})` : phrase
}

/**
 * The `tsquery` literal of a search in web search syntax, as PostgreSQL's `websearch_to_tsquery`
 * reads it: words must all match, `"a phrase"` matches its words in order, `or` between two
 * terms matches either, `-word` excludes. Null when the search has no words (nothing matches).
 */
export function searchQuery(q: string): string | null {
  const tokens = q.match(/-?"[^"]*"?|\S+/g) ?? []
  const out: string[] = []
  let or = false
  for (const token of tokens) {
    if (token.toLowerCase() === 'or') {
      or = out.length > 0
      continue
    }
    const negated = token.startsWith('-')
    const body = negated ? token.slice(1) : token
    const query = termQuery(body.startsWith('"') ? body.replace(/^"|"$/g, '') : body)
    if (!query) continue
    if (out.length) out.push(or ? '|' : '&')
    out.push(negated ? `!${query}` : query)
    or = false
  }
  return out.length ? out.join(' ') : null
}

/** A search's `tsquery` literal limited to one organization's messages: its words and the organization's lexeme. */
export const scopedQuery = (literal: string, orgId: string) => `(${literal}) & ${quote(orgLexeme(orgId))}`
