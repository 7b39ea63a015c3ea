/** Agent connections as the API returns them: the invitation, the claimed connection, the setup guide. */
import { t } from 'elysia'

export const Invitation = t.Object({
  id: t.String({ format: 'uuid' }),
  address: t.String(),
  label: t.Union([t.String(), t.Null()]),
  invitation_code: t.String({ description: 'give it to the runtime privately; shown only in this response; works once' }),
  expires_at: t.String({ format: 'date-time' }),
  setup_url: t.String({ description: 'the public setup guide the runtime follows' }),
})

export const Claimed = t.Object({
  connection_id: t.String({ format: 'uuid' }),
  connection_key: t.String({ pattern: '^conn_', description: 'the runtime credential; shown only in this response' }),
  address: t.String({ description: 'the one address the key acts for' }),
  setup_owner_address: t.String({ description: 'the email of the person who created the invitation' }),
})

const Step = t.Object({ step: t.Integer(), title: t.String(), detail: t.String() })

export const Guide = t.Object({
  credential: t.Object({ prefix: t.String(), header: t.String(), lifetime: t.String() }),
  steps: t.Array(Step),
  endpoints: t.Record(t.String(), t.String()),
  permissions: t.Array(t.Object({ method: t.String(), path: t.String(), why: t.String() })),
  text: t.String({ description: 'the same guide as plain text (also served for Accept: text/plain)' }),
})
