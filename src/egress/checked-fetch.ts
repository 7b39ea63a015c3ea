/**
 * One HTTP attempt at a webhook: POST the body to the URL, connecting to the address checked
 * just before (no DNS rebinding between check and connect), without following redirects,
 * within the attempt timeout. Never throws: the outcome says what happened.
 *
 * Bun's fetch keeps connections alive, pooled by the URL's host, port and TLS server name. The
 * URL we fetch carries the checked address as its host, so a pooled connection is reused only
 * for that same address; the name travels in the Host header and as the TLS server name, and
 * the certificate is verified against it (a connection verified for one name is never reused
 * for another, which must pass its own verification).
 */
import { isIP } from 'node:net'
import type { CheckedUrl } from './url-safety'

/** The response header a handler sets (to the event id) to confirm it processed the event. */
export const CONFIRMATION_HEADER = 'service-delivery-confirmed'
const MAX_RESPONSE_BYTES = 64 * 1024

export interface AttemptOutcome {
  /** HTTP status, or null when no response arrived */
  status: number | null
  /** a 2xx answer: the delivery succeeded */
  ok: boolean
  /** the first bytes of the response body */
  body: string
  confirmed: boolean
  error?: 'timeout' | 'connection_failed'
  message?: string
  durationMs: number
}

/** The URL with the checked address in place of the name. */
export function addressUrl(target: CheckedUrl): URL {
  const url = new URL(target.url)
  url.hostname = target.family === 6 ? `[${target.address}]` : target.address
  return url
}

/** The first `max` bytes of the body; a longer body is not read to its end. */
export async function readAtMost(res: Response, max: number): Promise<string> {
  if (!res.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body) {
    chunks.push(chunk)
    size += chunk.length
    if (size >= max) break
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8')
}

/**
 * GET a document from the checked address, by the same rules as a webhook POST (no redirects,
 * no proxy, the name as Host and TLS server name); reads at most `maxBytes` + 1 bytes, so
 * `tooLarge` says the document is over the cap. Throws when no answer arrives in time.
 */
export async function getChecked(
  target: CheckedUrl,
  opts: { accept: string; userAgent: string; timeoutMs: number; maxBytes: number },
): Promise<{ status: number; body: string; tooLarge: boolean }> {
  const name = target.url.hostname.replace(/^\[|\]$/g, '')
  const res = await fetch(addressUrl(target), {
    headers: { host: target.url.host, accept: opts.accept, 'user-agent': opts.userAgent },
    redirect: 'manual',
    signal: AbortSignal.timeout(opts.timeoutMs),
    tls: isIP(name) ? undefined : { serverName: name },
    proxy: false,
  })
  const body = await readAtMost(res, opts.maxBytes + 1)
  return { status: res.status, body, tooLarge: Buffer.byteLength(body) > opts.maxBytes }
}

export async function postWebhook(
  target: CheckedUrl,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  eventId: string,
): Promise<AttemptOutcome> {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const name = target.url.hostname.replace(/^\[|\]$/g, '')
  try {
    const res = await fetch(addressUrl(target), {
      method: 'POST',
      body,
      headers: { host: target.url.host, 'content-type': 'application/json', 'user-agent': 'agent-mail-webhooks/1', ...headers },
      redirect: 'manual',
      // covers the connection, the request and reading the answer
      signal: AbortSignal.timeout(timeoutMs),
      tls: isIP(name) ? undefined : { serverName: name },
      // HTTP(S)_PROXY in the environment would send the request to the proxy, not to the checked address
      proxy: false,
    })
    const answer = await readAtMost(res, MAX_RESPONSE_BYTES)
    return {
      status: res.status,
      ok: res.ok,
      body: answer,
      confirmed: res.ok && res.headers.get(CONFIRMATION_HEADER) === eventId,
      durationMs: elapsed(),
    }
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError'
    return {
      status: null,
      ok: false,
      body: '',
      confirmed: false,
      error: timedOut ? 'timeout' : 'connection_failed',
      message: timedOut ? `no answer within ${timeoutMs} ms` : (error as Error).message,
      durationMs: elapsed(),
    }
  }
}
