/** Address notes: what the organization's people, functions and agents note about an address. */
import { t } from 'elysia'
import { Nullable, OneOf } from '../http/schema'

export const NOTE_BODY_MAX = 10_000

export const AddressNote = t.Object({
  id: t.String({ format: 'uuid' }),
  address: t.String({ description: 'the address the note is about' }),
  body: t.String(),
  author: t.Object({
    kind: OneOf(['member', 'function', 'connection'] as const),
    id: t.String({ format: 'uuid', description: 'the user (or the key, for a key without one), the function, or the agent connection' }),
    address: Nullable(t.String({ description: 'connection: the bound address, the only one that may edit the note' })),
  }),
  version: t.Integer({ description: 'increases with every edit; also the ETag; send it back in If-Match' }),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})
