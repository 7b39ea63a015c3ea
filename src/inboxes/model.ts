/** The managed inbox, as the API returns it. */
import { t } from 'elysia'

export const Inbox = t.Object({
  id: t.String({ format: 'uuid' }),
  address: t.String({ description: 'the full address, lowercase' }),
  display_name: t.Union([t.String(), t.Null()], { description: 'the name shown in the From header of mail sent as this inbox' }),
  created_at: t.String({ format: 'date-time' }),
})
