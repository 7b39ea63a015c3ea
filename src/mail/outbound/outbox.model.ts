/** The local outbox entries, as the API returns them. */
import { t } from 'elysia'

export const Summary = t.Object({
  id: t.String({ format: 'uuid' }),
  rcpt: t.String({ description: 'the envelope recipient this copy was for' }),
  envelope_from: t.String({ description: 'MAIL FROM' }),
  subject: t.Union([t.String(), t.Null()]),
  message_id: t.Union([t.String(), t.Null()]),
  created_at: t.String({ format: 'date-time' }),
})

export const Message = t.Composite([
  Summary,
  t.Object({ raw: t.String({ description: 'the message as it would have been sent (RFC 5322, CRLF, DKIM-signed)' }) }),
])
