/** The Sending tag: send-mail (and its public sandbox), sent-email state, reschedule, cancel, senders. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated, publicAccess } from '../http/auth'
import { bodyLimit } from '../http/boundary'
import { Ok } from '../http/envelope'
import { idempotencyKeyOf } from '../http/idempotency'
import { Timestamp } from '../http/timestamps'
import { DemoSendResponse, SEND_MAIL_MAX_BODY_BYTES, SendMailBody, SendResponse, SentEmail } from './model'
import { stopRepeatAsRecipient } from './repeat'
import { validSenders } from './senders'
import { cancelSend, demoSend, getSend, sendMail, updateSend } from './service'
import { relayOf } from './relay'
import { IdParams } from '../http/schema'

export function sendingRoutes(ctx: AppContext) {
  const demo = new Elysia({ prefix: '/v1', tags: ['Sending'] }).use(publicAccess(ctx)).post('/send-mail/demo', ({ body }) => demoSend(body), {
    body: SendMailBody,
    response: { 200: Ok(DemoSendResponse) },
    // public, so it keeps the default body limit: the sandbox needs no large attachments
    detail: { summary: 'Sandbox send: validates like send-mail; nothing is sent, queued or stored', security: [] },
  })

  const live = new Elysia({ prefix: '/v1', tags: ['Sending'] })
    .use(authenticated(ctx))
    .post(
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
    .get('/sent-emails/:id', ({ auth, params }) => getSend(ctx, auth.orgId, params.id), {
      params: IdParams,
      response: { 200: Ok(SentEmail) },
      detail: { summary: 'The current state of a send' },
    })
    .patch('/sent-emails/:id', ({ auth, params, body }) => updateSend(ctx, auth.orgId, params.id, body), {
      params: IdParams,
      body: t.Object(
        {
          scheduled_at: t.Optional(Timestamp('the new time of a scheduled send')),
          repeat: t.Optional(
            t.Union([t.Object({ every_minutes: t.Integer({ minimum: 1, maximum: 525_600 }) }), t.Null()], {
              description: 'a new interval, or null to stop repeating',
            }),
          ),
        },
        { minProperties: 1 },
      ),
      response: { 200: Ok(SentEmail) },
      detail: { summary: 'Reschedule a scheduled send, or change or stop a repeat', description: '409 not_scheduled once the send left the scheduled state.' },
    })
    .post('/sent-emails/:id/cancel', ({ auth, params }) => cancelSend(ctx, auth.orgId, params.id), {
      params: IdParams,
      response: { 200: Ok(SentEmail) },
      detail: { summary: 'Cancel a scheduled send, or stop a repeat', description: '409 not_scheduled when there is nothing left to cancel.' },
    })
    .post('/emails/:id/repeat-stop', ({ auth, params }) => stopRepeatAsRecipient(ctx, auth.orgId, params.id), {
      params: IdParams,
      response: { 200: Ok(t.Object({ repeat_id: t.String({ format: 'uuid' }), stopped: t.Boolean() })) },
      detail: { tags: ['Emails'], summary: 'Stop a repeating send you received a tick of', description: 'The tick must be DKIM-authenticated by the sender.' },
    })
    .get(
      '/outbound/status',
      async ({ auth }) => {
        const senders = await validSenders(ctx.sql, auth.orgId)
        return { relay: relayOf(ctx).kind, verified_domains: senders.domains, managed_inboxes: senders.inboxes }
      },
      {
        response: {
          200: Ok(
            t.Object({
              relay: t.String({ description: 'smtp (SMTP_RELAY_URL) or local' }),
              verified_domains: t.Array(t.String()),
              managed_inboxes: t.Array(t.String()),
            }),
          ),
        },
        detail: { summary: 'Verified outbound senders', description: 'Send from a managed inbox, or from any address at a verified domain.' },
      },
    )

  return new Elysia().use(demo).use(live)
}
