/**
 * One HTTP attempt at a webhook: POST the body to the URL, connecting to the address checked
 * just before (no DNS rebinding between check and connect), without following redirects,
 * within the attempt timeout. Never throws: the outcome says what happened.
 */
import http from 'node:http'
import https from 'node:https'
import type { CheckedUrl } from './url-safety'

/** The response header a handler sets (to the event id) to confirm it processed the event. */
export const CONFIRMATION_HEADER = 'service-delivery-confirmed'
const MAX_RESPONSE_BYTES = 64 * 1024

export interface AttemptOutcome {
  /** HTTP status, or null when no response arrived */
  status: number | null
  /** the first bytes of the response body */
  body: string
  confirmed: boolean
  error?: 'timeout' | 'connection_failed'
  message?: string
  durationMs: number
}

export function postWebhook(target: CheckedUrl, body: string, headers: Record<string, string>, timeoutMs: number, eventId: string): Promise<AttemptOutcome> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const request = target.url.protocol === 'https:' ? https.request : http.request
  // Connect to the checked address; TLS still verifies the certificate against the host name.
  const lookup = ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) =>
    options?.all ? cb(null, [{ address: target.address, family: target.family }]) : cb(null, target.address, target.family)) as unknown as http.RequestOptions['lookup']
  return new Promise(resolve => {
    const req = request(
      {
        protocol: target.url.protocol,
        hostname: target.url.hostname.replace(/^\[|\]$/g, ''),
        port: target.url.port || undefined,
        path: target.url.pathname + target.url.search,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'agent-mail-webhooks/1', 'content-length': String(Buffer.byteLength(body)), ...headers },
        lookup,
        timeout: timeoutMs,
      },
      res => {
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_RESPONSE_BYTES) chunks.push(chunk)
          size += chunk.length
        })
        res.on('end', () => {
          const status = res.statusCode ?? 0
          resolve({
            status,
            body: Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8'),
            confirmed: status >= 200 && status < 300 && res.headers[CONFIRMATION_HEADER] === eventId,
            durationMs: elapsed(),
          })
        })
        res.on('error', error => resolve({ status: res.statusCode ?? null, body: '', confirmed: false, error: 'connection_failed', message: error.message, durationMs: elapsed() }))
      },
    )
    const deadline = setTimeout(() => req.destroy(new Error('timeout')), timeoutMs)
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', error => {
      clearTimeout(deadline)
      const timedOut = error.message === 'timeout'
      resolve({ status: null, body: '', confirmed: false, error: timedOut ? 'timeout' : 'connection_failed', message: timedOut ? `no answer within ${timeoutMs} ms` : error.message, durationMs: elapsed() })
    })
    req.on('close', () => clearTimeout(deadline))
    req.end(body)
  })
}
