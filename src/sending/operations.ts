/**
 * Sends as operations (src/http/operation.ts): the sent mail of the organization, reschedule and
 * cancel, stopping a repeat as its recipient, and the verified senders. POST /v1/send-mail (and
 * its public sandbox) stays in routes.ts: its Idempotency-Key header is read and answered there,
 * and the MCP tools send_email, reply_to_email and forward_email compose its body (mcp/tools/sending.ts).
 */
import { t } from 'elysia'
import { errors } from '../errors'
import { listOperation, operation } from '../http/operation'
import { Timestamp } from '../http/timestamps'
import { SentEmail } from './model'
import { relayOf } from './relay'
import { stopRepeatAsRecipient } from './repeat'
import { validSenders } from './senders'
import { cancelSend, getSend, listSends, presentSend, updateSend } from './service'

const TAG = 'Sending'
const Id = (description?: string) => ({ id: t.String({ format: 'uuid', ...(description && { description }) }) })

export const sendingOperations = [
  listOperation({
    name: 'list_sent_emails',
    method: 'GET',
    path: '/v1/sent-emails',
    tag: TAG,
    summary: 'List sent emails',
    description: 'The sends of the organization, newest first, each in its current state (as GET /v1/sent-emails/{id} answers it).',
    graphql: { field: 'sentEmails', type: 'SentEmail', description: 'Sends (POST /v1/send-mail), newest first (as GET /v1/sent-emails).' },
    list: {
      item: SentEmail,
      scope: ({ auth }) => `sent-emails:${auth.orgId}`,
      fetch: ({ ctx, auth }, _args, page) => listSends(ctx, auth.orgId, page),
      present: presentSend,
    },
  }),
  operation({
    name: 'get_sent_email',
    method: 'GET',
    path: '/v1/sent-emails/:id',
    tag: TAG,
    summary: 'The current state of a send',
    params: Id('the id a send returned (POST /v1/send-mail; the MCP tools send_email, reply_to_email, forward_email)'),
    resource: 'send',
    mcp: { description: 'The current state of a send: queued, scheduled, executed, failed or canceled, with what the relay answered.' },
    output: SentEmail,
    graphql: { field: 'sentEmail', type: 'SentEmail' },
    handle: ({ ctx, auth }, { id }) => getSend(ctx, auth.orgId, id),
  }),
  operation({
    name: 'reschedule_email',
    method: 'PATCH',
    path: '/v1/sent-emails/:id',
    tag: TAG,
    summary: 'Reschedule a scheduled send, or change or stop a repeat',
    description: '409 not_scheduled once the send left the scheduled state.',
    params: Id('the scheduled send'),
    resource: 'send',
    mcp: {
      description:
        'Moves a scheduled send to a new time, or changes or stops its repeat (repeat null). Fails with not_scheduled once it left the scheduled state.',
    },
    input: t.Object(
      {
        scheduled_at: t.Optional(Timestamp('the new time of a scheduled send')),
        repeat: t.Optional(
          t.Union([t.Object({ every_minutes: t.Integer({ minimum: 1, maximum: 525_600 }) }), t.Null()], {
            description: 'a new interval, or null to stop repeating',
          }),
        ),
      },
      // REST refuses an empty body by its schema; an MCP tool's arguments are checked below
      { minProperties: 1 },
    ),
    output: SentEmail,
    handle: ({ ctx, auth }, { id, ...patch }) => {
      if (patch.scheduled_at === undefined && patch.repeat === undefined) throw errors.validation('scheduled_at', 'give scheduled_at, repeat or both')
      // Elysia's t.Integer also takes a numeric string (and REST converts it, within bounds); a tool's argument must be the number
      if (patch.repeat && typeof patch.repeat.every_minutes !== 'number') throw errors.validation('repeat', 'must be an object or null')
      return updateSend(ctx, auth.orgId, id, patch)
    },
  }),
  operation({
    name: 'cancel_scheduled_email',
    method: 'POST',
    path: '/v1/sent-emails/:id/cancel',
    tag: TAG,
    summary: 'Cancel a scheduled send, or stop a repeat',
    description: '409 not_scheduled when there is nothing left to cancel.',
    params: Id('the scheduled or repeating send'),
    resource: 'send',
    mcp: {
      description: 'Cancels a scheduled send, or stops a repeating one. Fails with not_scheduled when nothing is left to cancel.',
      hints: { destructiveHint: true },
    },
    output: SentEmail,
    handle: ({ ctx, auth }, { id }) => cancelSend(ctx, auth.orgId, id),
  }),
  operation({
    name: 'stop_repeat_as_recipient',
    method: 'POST',
    path: '/v1/emails/:id/repeat-stop',
    tag: 'Emails',
    summary: 'Stop a repeating send you received a tick of',
    description: 'The tick must be DKIM-authenticated by the sender.',
    params: Id(),
    resource: 'email',
    mcp: false,
    output: t.Object({ repeat_id: t.String({ format: 'uuid' }), stopped: t.Boolean() }),
    handle: ({ ctx, auth }, { id }) => stopRepeatAsRecipient(ctx, auth.orgId, id),
  }),
  operation({
    name: 'get_outbound_status',
    method: 'GET',
    path: '/v1/outbound/status',
    tag: TAG,
    summary: 'Verified outbound senders',
    description: 'Send from a managed inbox, or from any address at a verified domain.',
    mcp: false,
    output: t.Object({
      relay: t.String({ description: 'smtp (SMTP_RELAY_URL) or local' }),
      verified_domains: t.Array(t.String()),
      managed_inboxes: t.Array(t.String()),
    }),
    handle: async ({ ctx, auth }) => {
      const senders = await validSenders(ctx.sql, auth.orgId)
      return { relay: relayOf(ctx).kind, verified_domains: senders.domains, managed_inboxes: senders.inboxes }
    },
  }),
]
