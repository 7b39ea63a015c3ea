/** The zero-touch agent account, as its one call returns it. */
import { t } from 'elysia'

export const AgentAccount = t.Object({
  org_id: t.String({ format: 'uuid' }),
  plan: t.Literal('agent'),
  api_key: t.String({ description: 'shown only in this response' }),
  key_id: t.String({ format: 'uuid' }),
  inbox: t.Object({ id: t.String({ format: 'uuid' }), address: t.String(), created_at: t.String({ format: 'date-time' }) }),
})
