/**
 * Verifying the service's webhook deliveries in the receiver, with Web Crypto only (Node 20+,
 * Bun, Deno, edge runtimes). A delivery carries two signatures over the raw body:
 *
 * - `Service-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`: HMAC-SHA256 of `<t>.<body>` keyed by
 *   the webhook secret as UTF-8 (one v1 per valid secret during a rotation);
 * - Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64> ...`
 *   over `<id>.<t>.<body>`, keyed by the base64 part of the `whsec_` secret.
 *
 * Either one passes; the timestamp must be within the tolerance of now (both ways), and the
 * comparison is constant-time (crypto.subtle.verify).
 */
import type { webhooks } from './schema.ts'

export type WebhookEventName = keyof webhooks
/** The JSON body of a delivery, by event name (the OpenAPI document's `webhooks`). */
export type WebhookEvent<N extends WebhookEventName = WebhookEventName> = {
  [K in N]: webhooks[K] extends { post: { requestBody?: { content: { 'application/json': infer B } } } } ? WithEmail<K, B> : never
}[N]

/** Every event but email.bounced carries its email; a bounce a relay gave at delivery has none (docs/bounces.md). */
type WithEmail<K, B> = K extends 'email.bounced' ? B : B extends { email: infer E } ? Omit<B, 'email'> & { email: NonNullable<E> } : B

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError'
  constructor(
    readonly reason: 'missing_signature' | 'timestamp_out_of_range' | 'signature_mismatch' | 'invalid_body',
    message: string,
  ) {
    super(message)
  }
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>

function header(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  const key = Object.keys(headers).find(k => k.toLowerCase() === name)
  const value = key === undefined ? undefined : headers[key]
  return Array.isArray(value) ? value.join(',') : value
}

const encoder = new TextEncoder()
/** bytes on an ArrayBuffer of their own, as Web Crypto takes them */
type Bytes = Uint8Array<ArrayBuffer>

function fromHex(hex: string): Bytes | null {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return null
  return Uint8Array.from(hex.match(/../g)!, b => Number.parseInt(b, 16))
}

function fromBase64(text: string): Bytes | null {
  try {
    return Uint8Array.from(atob(text), c => c.charCodeAt(0))
  } catch {
    return null
  }
}

async function hmacVerifies(key: Bytes, signature: Bytes, data: Bytes): Promise<boolean> {
  const cryptoKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify'])
  return crypto.subtle.verify('HMAC', cryptoKey, signature, data)
}

function concat(prefix: string, body: Uint8Array): Bytes {
  const head = encoder.encode(prefix)
  const out = new Uint8Array(head.length + body.length)
  out.set(head)
  out.set(body, head.length)
  return out
}

export interface VerifyOptions {
  /** seconds the timestamp may be away from now, either way (default 300) */
  toleranceSeconds?: number
  /** now, in unix milliseconds (tests) */
  now?: number
}

/**
 * Checks a delivery's signature and returns its event. `body` is the raw request body exactly
 * as received (parse it only afterwards); `secret` is the organization's webhook secret, or
 * several while you roll one over. Throws WebhookVerificationError.
 */
export async function verifyWebhook<N extends WebhookEventName = WebhookEventName>(
  body: string | Uint8Array,
  headers: HeaderBag,
  secret: string | string[],
  options: VerifyOptions = {},
): Promise<WebhookEvent<N>> {
  const raw = typeof body === 'string' ? encoder.encode(body) : body
  const secrets = Array.isArray(secret) ? secret : [secret]
  const tolerance = options.toleranceSeconds ?? 300
  const now = Math.floor((options.now ?? Date.now()) / 1000)
  const checkTime = (t: number) => {
    if (!Number.isInteger(t) || Math.abs(now - t) > tolerance) {
      throw new WebhookVerificationError('timestamp_out_of_range', `the signature's timestamp is more than ${tolerance} s away from now`)
    }
  }

  const service = header(headers, 'service-signature')
  const standard = header(headers, 'webhook-signature')
  let verified = false
  if (service) {
    const parts = service.split(',').map(p => p.trim())
    const t = Number(parts.find(p => p.startsWith('t='))?.slice(2))
    checkTime(t)
    const signatures = parts.filter(p => p.startsWith('v1=')).map(p => fromHex(p.slice(3)))
    const signed = concat(`${t}.`, raw)
    for (const s of secrets) for (const sig of signatures) if (sig && (await hmacVerifies(encoder.encode(s), sig, signed))) verified = true
  } else if (standard) {
    const id = header(headers, 'webhook-id') ?? ''
    const t = Number(header(headers, 'webhook-timestamp'))
    checkTime(t)
    const signatures = standard.split(' ').map(p => (p.startsWith('v1,') ? fromBase64(p.slice(3)) : null))
    const signed = concat(`${id}.${t}.`, raw)
    for (const s of secrets) {
      const key = fromBase64(s.replace(/^whsec_/, ''))
      for (const sig of signatures) if (key && sig && (await hmacVerifies(key, sig, signed))) verified = true
    }
  } else {
    throw new WebhookVerificationError('missing_signature', 'no Service-Signature or webhook-signature header')
  }
  if (!verified) throw new WebhookVerificationError('signature_mismatch', 'no signature matches the secret')
  try {
    return JSON.parse(new TextDecoder().decode(raw)) as WebhookEvent<N>
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the signed body is not JSON')
  }
}
