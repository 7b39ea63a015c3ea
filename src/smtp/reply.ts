/** SMTP reply formatting, and the sanitising of replies that come from hooks. */
import type { SmtpReply } from './types'

const LINE_BREAK = /[\r\n]/

/** Multi-line replies use `code-` continuation lines (RFC 5321 4.2.1); CR/LF in text cannot inject lines. */
export function formatReply(code: number, enhanced: string | undefined, message: string): string {
  const prefix = enhanced ? `${enhanced} ` : ''
  if (!LINE_BREAK.test(message)) return `${code} ${prefix}${message}\r\n`
  const lines = message.split(/\r\n|\r|\n/)
  return lines.map((line, i) => `${code}${i === lines.length - 1 ? ' ' : '-'}${prefix}${line}`).join('\r\n') + '\r\n'
}

/** Keeps hook replies well-formed: a valid code, an enhanced code of the same class, no control characters. */
export function normalizeReply(r: SmtpReply): SmtpReply {
  // 1xx/3xx would desynchronise the client (e.g. a 354 it never asked for).
  const code = Number.isInteger(r.code) && ((r.code >= 200 && r.code < 300) || (r.code >= 400 && r.code < 600)) ? r.code : 451
  const cls = String(code)[0]
  const enhanced = r.enhanced && /^[245]\.\d{1,3}\.\d{1,3}$/.test(r.enhanced) && r.enhanced[0] === cls ? r.enhanced : `${cls}.0.0`
  const message = String(r.message ?? '').replace(/[\x00-\x09\x0b\x0c\x0e-\x1f\x7f]/g, ' ') || 'OK'
  return { code, enhanced, message }
}
