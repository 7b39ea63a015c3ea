/** Contacts: the correspondents of one of the organization's addresses. */
import { t } from 'elysia'
import { Nullable, OneOf } from '../http/schema'

export const TAG_MAX = 20
export const tag = t.String({ minLength: 1, maxLength: 50, pattern: '^[^\\s,][^,]*$', description: 'a label; no commas' })
export const tags = t.Array(tag, { maxItems: TAG_MAX, uniqueItems: true, description: `up to ${TAG_MAX} labels` })
export const contactName = Nullable(t.String({ minLength: 1, maxLength: 200 }))

export const Contact = t.Object({
  id: t.String({ format: 'uuid' }),
  owner_address: t.String({ description: "the organization's address whose contact this is" }),
  address: t.String({ description: 'the correspondent' }),
  name: Nullable(t.String()),
  tags: t.Array(t.String()),
  source: OneOf(['manual', 'network'] as const, { description: "network: admitted from a network's directory" }),
  network_id: Nullable(t.String({ format: 'uuid' })),
  agent_id: Nullable(t.String({ format: 'uuid', description: 'the published agent it was admitted as' })),
  send_grant: OneOf(['none', 'granted', 'denied'] as const, {
    description:
      'whether the reply-only send gate lets owner_address write to it first: granted by network admission while the agent accepts contacts in a shared network; denied once it no longer does; none for a contact added by hand',
  }),
  first_seen_at: Nullable(t.String({ format: 'date-time', description: 'the first mail between the two addresses' })),
  last_contacted_at: Nullable(t.String({ format: 'date-time', description: 'the last mail between the two addresses, either way' })),
  messages_received: t.Integer({ description: 'mail from address to owner_address' }),
  messages_sent: t.Integer({ description: 'mail from owner_address to address' }),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})
