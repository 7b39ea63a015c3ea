/** The Received: trace header (RFC 5321 4.4) prepended to every accepted message. */
import { isIPv6 } from 'node:net'

/** RFC 3848 / RFC 6531 3.7.3 "with" protocol names. RFC 3848 has no name for TLS without EHLO, so TLS implies ESMTPS. */
export function protocolName(esmtp: boolean, tls: boolean, smtputf8: boolean): string {
  if (smtputf8) return tls ? 'UTF8SMTPS' : 'UTF8SMTP'
  if (tls) return 'ESMTPS'
  return esmtp ? 'ESMTP' : 'SMTP'
}

/** RFC 5321 4.4 trace header, folded onto continuation lines. */
export function receivedHeader(p: { helo: string; remoteAddress: string; hostname: string; protocol: string; id: string; rcpt?: string; date: Date }): string {
  // The HELO name is client-controlled: keep it from breaking the header's structure.
  const helo = p.helo.replace(/[^\x21-\x7e]|[()\\;"<>]/g, '?')
  const lines = [`Received: from ${helo} (${addressLiteral(p.remoteAddress)})`, `\tby ${p.hostname} with ${p.protocol} id ${p.id}`]
  // Only a single recipient is named: listing several would disclose Bcc recipients to each other.
  if (p.rcpt !== undefined) lines.push(`\tfor <${p.rcpt}>;`)
  else lines[lines.length - 1] += ';'
  lines.push(`\t${rfc5322Date(p.date)}`)
  return lines.join('\r\n') + '\r\n'
}

function addressLiteral(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped) return `[${mapped[1]}]`
  if (isIPv6(ip)) return `[IPv6:${ip}]`
  return `[${ip}]`
}

/** The last date formatted, by its second: a busy listener stamps many messages a second. */
let lastDate = { second: NaN, text: '' }

function rfc5322Date(d: Date): string {
  const second = Math.floor(d.getTime() / 1000)
  if (second !== lastDate.second) lastDate = { second, text: d.toUTCString().replace(/GMT$/, '+0000') }
  return lastDate.text
}
