/**
 * How a failure of the SMTP relay becomes an error code of the contract. Decided by what the
 * relay said (its reply code), else by what happened to the connection, and by how far the
 * transaction got: only a failure without a reply after the message data went out leaves the
 * message possibly sent (`maybeSent`).
 *
 * | what happened                                                    | code                         | maybeSent      |
 * |------------------------------------------------------------------|------------------------------|----------------|
 * | a reply that is not SMTP (no 3-digit code, unexpected 2xx/3xx)   | outbound_response_malformed  | if data sent   |
 * | 530/534/535/538 reply, or the AUTH exchange failed (EAUTH)        | outbound_key_invalid         | no             |
 * | 421, 452, 454, or a 4xx with 4.3.1/4.3.2/4.4.5/4.5.3 (capacity,   | outbound_capacity_exhausted  | no             |
 * |   throttling); for all-recipients-refused: any recipient's reply  |                              |                |
 * | any other 4xx/5xx reply (MAIL, RCPT, DATA, end of data, greeting) | outbound_relay_failed        | no             |
 * | refused, DNS failure, connect/greeting/TLS-upgrade timeout,       | outbound_unreachable         | no             |
 * |   connection lost before the message data was sent                |                              |                |
 * | no answer, or connection lost, after the message data was sent    | outbound_relay_timeout       | yes            |
 * | socket idle timeout during the envelope (MAIL/RCPT/DATA)          | outbound_relay_timeout       | no             |
 * | TLS handshake or certificate failure                              | outbound_relay_failed        | no             |
 */
import type { NodemailerError } from 'nodemailer/lib/errors'
import { RelayError, type Refusal, type RelayErrorCode } from './relay-types'

/** Where the transaction was when it failed. */
export type SmtpPhase = 'connect' | 'auth' | 'transaction'

const CAPACITY_REPLIES = new Set([421, 452, 454])
/** RFC 3463: mail system full, not accepting, congestion, too many recipients. */
const CAPACITY_ENHANCED = new Set(['4.3.1', '4.3.2', '4.4.5', '4.5.3'])
const AUTH_REPLIES = new Set([530, 534, 535, 538])

const REPLY = /^([2-5]\d\d)(?:[ -]|$)(?:(\d\.\d{1,3}\.\d{1,3})\b)?/

interface Reply {
  code: number
  enhanced: string | null
}

function parseReply(response: string | undefined): Reply | null {
  const m = response ? REPLY.exec(response.trim()) : null
  return m ? { code: Number(m[1]), enhanced: m[2] ?? null } : null
}

const isCapacity = (r: Reply) => CAPACITY_REPLIES.has(r.code) || (r.code >= 400 && r.code < 500 && r.enhanced !== null && CAPACITY_ENHANCED.has(r.enhanced))

/** The replies behind an error: the one it carries, and those of each refused recipient. */
function repliesOf(e: NodemailerError): Reply[] {
  return [e.response, ...(e.rejectedErrors ?? []).map(r => r.response)].map(parseReply).filter((r): r is Reply => r !== null)
}

const summary = (e: NodemailerError) => `${e.message}${e.command ? ` (${e.command})` : ''}`

/** A TLS handshake or certificate failure: nodemailer reports some as ETLS, others as a socket error with the TLS code kept. */
const isTlsFailure = (e: NodemailerError) => e.code === 'ETLS' || /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET/.test(e.originalCode ?? '')

/** The reply to each recipient the relay refused at RCPT TO (nodemailer's `rejectedErrors`). */
export const refusalsOf = (errors: NodemailerError[] | undefined): Refusal[] =>
  (errors ?? []).flatMap(r => (r.recipient && r.response ? [{ address: r.recipient, reply: r.response }] : []))

/** The contract's error for a failure of the relay, given the phase and whether the message data started to go out. */
export function classifySmtpError(e: NodemailerError, phase: SmtpPhase, dataStarted: boolean): RelayError {
  const fail = (code: RelayErrorCode, maybeSent: boolean, why: string) => new RelayError(code, `${why}: ${summary(e)}`, maybeSent, refusalsOf(e.rejectedErrors))
  const replies = repliesOf(e)

  // the relay answered something that is not an SMTP reply, a reply nobody asked for, or a
  // success-class reply where only a refusal could have failed the step (e.g. 354 to the end of data)
  const unexpected = replies.length > 0 && replies.every(r => r.code < 400)
  if ((e.response && replies.length === 0) || unexpected || (e.code === 'EPROTOCOL' && /Unexpected Response|maximum allowed size/.test(e.message))) {
    return fail('outbound_response_malformed', dataStarted, 'the relay answered outside the SMTP protocol')
  }
  if (replies.length) {
    if (replies.some(r => AUTH_REPLIES.has(r.code))) return fail('outbound_key_invalid', false, 'the relay refused our credentials')
    if (replies.some(isCapacity)) return fail('outbound_capacity_exhausted', false, 'the relay is out of capacity or throttling')
    if (e.code === 'EAUTH') return fail('outbound_key_invalid', false, 'authentication with the relay failed')
    return fail('outbound_relay_failed', false, 'the relay refused the message')
  }

  if (isTlsFailure(e)) return fail('outbound_relay_failed', false, 'TLS with the relay failed')
  switch (e.code) {
    case 'EAUTH':
    case 'ENOAUTH':
      return fail('outbound_key_invalid', false, 'authentication with the relay failed')
    case 'EDNS':
      return fail('outbound_unreachable', false, 'the relay host does not resolve')
    case 'ETIMEDOUT':
      if (phase === 'connect' || e.timeoutType !== 'SOCKET_TIMEOUT') return fail('outbound_unreachable', false, 'the relay did not answer while connecting')
      return fail('outbound_relay_timeout', dataStarted, dataStarted ? 'the relay did not answer after the message was sent' : 'the relay stopped answering')
    case 'ECONNECTION':
    case 'ESOCKET':
      if (phase !== 'connect' && dataStarted) return fail('outbound_relay_timeout', true, 'the relay connection broke after the message was sent')
      return fail('outbound_unreachable', false, 'the relay connection failed before anything was sent')
    default:
      return fail('outbound_relay_failed', dataStarted, 'the relay failed')
  }
}

/** A connection the relay dropped (e.g. an idle one it timed out) before anything was sent on it: safe to retry on a new one. */
export function isDroppedConnection(e: NodemailerError, dataStarted: boolean): boolean {
  return !dataStarted && repliesOf(e).length === 0 && (e.code === 'ECONNECTION' || e.code === 'ESOCKET')
}
