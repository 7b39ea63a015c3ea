/** The API key, as the API lists it (never with its secret). */
import { t } from 'elysia'

export const ApiKey = t.Object({
  id: t.String({ format: 'uuid' }),
  name: t.String(),
  hint: t.String({ description: 'the first characters of the key, to tell keys apart' }),
  created_by: t.Union([t.String({ format: 'uuid' }), t.Null()]),
  created_at: t.String({ format: 'date-time' }),
  revoked_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
})
