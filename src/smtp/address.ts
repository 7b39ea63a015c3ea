/** Parsing of MAIL FROM / RCPT TO arguments: paths, mailboxes and ESMTP parameters. */
import { isIPv4, isIPv6 } from 'node:net'

/** RFC 5321 4.5.3.1: size limits of the parts of a path. */
const MAX_LOCAL_PART = 64
const MAX_DOMAIN = 255
const MAX_PATH = 256

/** Splits `FROM:<path> params` / `TO:<path> params`. A space after the colon is tolerated (common, though not RFC 5321). */
export function parsePathArgument(arg: string, keyword: 'FROM' | 'TO'): { path: string; rest: string } | null {
  if (arg.slice(0, keyword.length + 1).toUpperCase() !== `${keyword}:`) return null
  let i = keyword.length + 1
  while (arg[i] === ' ') i++
  if (arg[i] !== '<') return null
  const start = i
  let quoted = false
  for (i++; i < arg.length; i++) {
    const c = arg[i]
    if (quoted && c === '\\') i++
    else if (c === '"') quoted = !quoted
    else if (c === '>' && !quoted) break
  }
  if (i >= arg.length) return null
  const rest = arg.slice(i + 1)
  if (rest !== '' && !rest.startsWith(' ')) return null
  return { path: arg.slice(start, i + 1), rest: rest.trim() }
}

/**
 * Validates an RFC 5321 path (`<...>`) and returns the mailbox: '' for the null path (sender
 * only), 'postmaster' for the bare postmaster recipient (RFC 5321 4.1.1.3), null if invalid.
 * A source route (`<@a,@b:user@c>`) is accepted and ignored, as RFC 5321 C requires.
 */
export function parseMailbox(path: string, role: 'sender' | 'recipient'): string | null {
  if (byteLength(path) > MAX_PATH) return null
  let inner = path.slice(1, -1)
  if (inner === '') return role === 'sender' ? '' : null
  if (role === 'recipient' && inner.toLowerCase() === 'postmaster') return inner
  const route = /^@[^,:]+(?:,@[^,:]+)*:/.exec(inner)
  if (route) {
    const hops = route[0].slice(0, -1).split(',')
    if (!hops.every(h => isDomain(h.slice(1)))) return null
    inner = inner.slice(route[0].length)
  }
  const at = inner.lastIndexOf('@')
  if (at <= 0) return null
  const local = inner.slice(0, at)
  const domain = inner.slice(at + 1)
  if (byteLength(local) > MAX_LOCAL_PART || !isLocalPart(local)) return null
  if (!isDomain(domain) && !isAddressLiteral(domain)) return null
  return inner
}

// atext (RFC 5322) plus UTF8-non-ascii (RFC 6531); whether UTF-8 is allowed is checked separately.
const ATOM = "[A-Za-z0-9!#$%&'*+\\-/=?^_`{|}~\\u0080-\\u{10FFFF}]+"
const DOT_STRING = new RegExp(`^${ATOM}(?:\\.${ATOM})*$`, 'u')
const QUOTED_STRING = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e\u0080-\u{10FFFF}]|\\[\x20-\x7e])*"$/u
const LABEL = /^[A-Za-z0-9\u0080-\u{10FFFF}](?:[A-Za-z0-9\-\u0080-\u{10FFFF}]*[A-Za-z0-9\u0080-\u{10FFFF}])?$/u

function isLocalPart(s: string): boolean {
  return DOT_STRING.test(s) || QUOTED_STRING.test(s)
}

function isDomain(s: string): boolean {
  if (s === '' || byteLength(s) > MAX_DOMAIN) return false
  return s.split('.').every(label => byteLength(label) <= 63 && LABEL.test(label))
}

function isAddressLiteral(s: string): boolean {
  if (!s.startsWith('[') || !s.endsWith(']')) return false
  const inner = s.slice(1, -1)
  if (isIPv4(inner)) return true
  if (/^IPv6:/i.test(inner)) return isIPv6(inner.slice(5))
  // General-address-literal: Standardized-tag ":" 1*dcontent
  return /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?:[\x21-\x5a\x5e-\x7e]+$/.test(inner)
}

/** ESMTP parameters (`KEY[=value]`, keys case-insensitive, upper-cased). Null on bad syntax or duplicates. */
export function parseParameters(rest: string): Map<string, string | undefined> | null {
  const params = new Map<string, string | undefined>()
  if (rest === '') return params
  for (const token of rest.split(/ +/)) {
    const m = /^([A-Za-z0-9][A-Za-z0-9-]*)(?:=([^=\s]+))?$/.exec(token)
    if (!m) return null
    const key = m[1]!.toUpperCase()
    if (params.has(key)) return null
    params.set(key, m[2])
  }
  return params
}

/** Plain ASCII, as addresses must be outside an SMTPUTF8 transaction (RFC 6531 3.4). */
export function isAscii(s: string): boolean {
  return /^[\x00-\x7f]*$/.test(s)
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8')
}
