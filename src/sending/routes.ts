/**
 * The Sending routes still written by hand: send-mail (its Idempotency-Key header is read and
 * answered here, and its body limit is its own) and its public sandbox. The other Sending
 * operations are declared in operations.ts.
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { authenticated, publicAccess } from '../http/auth'
import { bodyLimit } from '../http/boundary'
import { Ok } from '../http/envelope'
import { idempotencyKeyOf } from '../http/idempotency'
import { DemoSendResponse, SEND_MAIL_MAX_BODY_BYTES, SendMailBody, SendResponse } from './model'
import { demoSend, sendMail } from './service'

export function sendingRoutes(ctx: AppContext) {
  const demo = new Elysia({ prefix: '/v1', tags: ['Sending'] }).use(publicAccess(ctx)).post('/send-mail/demo', ({ body }) => demoSend(body), {
    body: SendMailBody,
    response: { 200: Ok(DemoSendResponse) },
    // public, so it keeps the default body limit: the sandbox needs no large attachments
    detail: { summary: 'Sandbox send: validates like send-mail; nothing is sent, queued or stored', security: [] },
  })

  const live = new Elysia({ prefix: '/v1', tags: ['Sending'] }).use(authenticated(ctx)).post(
    '/send-mail',
    async ({ auth, body, headers, set }) => {
      const result = await sendMail(ctx, auth, body, idempotencyKeyOf(headers))
      set.headers['idempotency-key'] = result.key
      return result.data
    },
    {
      body: SendMailBody,
      response: { 200: Ok(SendResponse) },
      detail: {
        ...bodyLimit(SEND_MAIL_MAX_BODY_BYTES),
        summary: 'Send an email',
        description:
          'Returns `queued` once the relay accepted the message (or `scheduled`). Idempotency-Key: a retry with the same key returns the original result without sending again; without the header the key is derived from the payload and returned in the Idempotency-Key response header. Relay failures: 502 outbound_unreachable (nothing sent; retrying sends), 504 outbound_relay_timeout (may be in flight; retrying with the same key never sends twice), 502 outbound_relay_failed, 502 outbound_response_malformed, 503 outbound_capacity_exhausted, 500 outbound_key_invalid.',
      },
    },
  )

  return new Elysia().use(demo).use(live)
}
