/** The webhook delivery, as the API returns it. */
import { t } from 'elysia'
import { Nullable, OneOf } from '../http/schema'

export const STATUSES = ['pending', 'delivered', 'header_confirmed', 'failed', 'skipped_by_rules'] as const

export const Delivery = t.Object({
  id: t.String({ format: 'uuid' }),
  org_id: t.String({ format: 'uuid' }),
  email_id: Nullable(t.String({ format: 'uuid' })),
  endpoint_id: t.String({ format: 'uuid' }),
  endpoint_url: t.String({ description: 'for a function endpoint, function://<id>' }),
  event_id: t.String({ description: 'the `id` of the event: identical across retries and replays' }),
  event_type: t.String(),
  status: OneOf(STATUSES),
  attempt_count: t.Integer(),
  duration_ms: Nullable(t.Integer()),
  response_status: Nullable(t.Integer({ description: 'HTTP status of the last attempt' })),
  last_error: Nullable(t.String()),
  last_error_code: Nullable(
    t.String({ description: 'http_<status>, content_discarded, superseded, queue_dead_letter; while retrying also timeout, connection_failed or url_refused' }),
  ),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
  email: t.Object({ sender: Nullable(t.String()), recipient: Nullable(t.String()), subject: Nullable(t.String()) }),
})
