/**
 * Webhook signatures. The contract's `Service-Signature: t=<unix>,v1=<hex>` (and the same value
 * in `Legacy-Signature`) is HMAC-SHA256 of `<t>.<raw body>` keyed by the secret as UTF-8, with
 * one `v1` per valid secret during a rotation. The Standard Webhooks headers (`webhook-id`,
 * `webhook-timestamp`, `webhook-signature: v1,<base64>`) sign `<id>.<t>.<body>` with the
 * base64-decoded part of the same `whsec_` secret, so ecosystem verifiers work too.
 */
import { createHmac } from 'node:crypto'

export function serviceSignature(secrets: string[], timestamp: number, body: string): string {
  const v1 = secrets.map(s => `v1=${createHmac('sha256', Buffer.from(s, 'utf8')).update(`${timestamp}.${body}`).digest('hex')}`)
  return [`t=${timestamp}`, ...v1].join(',')
}

export function standardWebhookSignature(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map(
      s =>
        `v1,${createHmac('sha256', Buffer.from(s.replace(/^whsec_/, ''), 'base64'))
          .update(`${id}.${timestamp}.${body}`)
          .digest('base64')}`,
    )
    .join(' ')
}

export function signedHeaders(secrets: string[], eventId: string, body: string, now = Date.now()): Record<string, string> {
  const t = Math.floor(now / 1000)
  const signature = serviceSignature(secrets, t, body)
  return {
    'service-signature': signature,
    'legacy-signature': signature,
    'webhook-id': eventId,
    'webhook-timestamp': String(t),
    'webhook-signature': standardWebhookSignature(secrets, eventId, t, body),
  }
}
