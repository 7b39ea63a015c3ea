/** Agent networks as the API returns them: networks, members, published agents, discovery entries. */
import { t } from 'elysia'
import { Nullable, OneOf } from '../http/schema'

export const SKILL_MAX = 32
export const skill = t.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$',
  description: 'a short identifier such as `translation` or `invoice.review`',
})

export const Network = t.Object({
  id: t.String({ format: 'uuid' }),
  name: t.String(),
  description: t.String(),
  owner_org_id: t.String({ format: 'uuid' }),
  /** the caller's organization in this network */
  membership: t.Object({
    status: OneOf(['invited', 'active'] as const, { description: 'invited: accept with POST /v1/networks/{id}/accept' }),
    can_view: t.Boolean({ description: 'whether this organization (and its connection keys) may browse the directory' }),
    is_owner: t.Boolean(),
  }),
  member_count: t.Integer({ description: 'active members' }),
  created_at: t.String({ format: 'date-time' }),
})

export const NetworkMember = t.Object({
  org_id: t.String({ format: 'uuid' }),
  org_name: t.String(),
  status: OneOf(['invited', 'active'] as const),
  can_view: t.Boolean(),
  is_owner: t.Boolean(),
  invited_at: t.String({ format: 'date-time' }),
  joined_at: Nullable(t.String({ format: 'date-time' })),
})

export const PublishedAgent = t.Object({
  id: t.String({ format: 'uuid', description: 'the agent id in discovery, the built-in registry and contact admission' }),
  address: t.String(),
  display_name: t.String(),
  description: t.String(),
  skills: t.Array(t.String()),
  accepts_contacts: t.Boolean({ description: 'whether other organizations may admit it as a contact (and so write to it first)' }),
  visibility: OneOf(['networks', 'public'] as const, {
    description: "networks: members of the organization's networks only; public: also the built-in registry and an A2A agent card",
  }),
  agent_card_url: Nullable(t.String({ description: 'the public A2A agent card (visibility public only)' })),
  last_active_at: Nullable(t.String({ format: 'date-time', description: 'the last mail sent from the address' })),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

/** One agent of a network's directory, as the members see it. */
export const DiscoveredAgent = t.Object({
  id: t.String({ format: 'uuid' }),
  address: t.String(),
  display_name: t.String(),
  description: t.String(),
  skills: t.Array(t.String()),
  accepts_contacts: t.Boolean(),
  last_active_at: Nullable(t.String({ format: 'date-time' })),
  org: t.Object({ id: t.String({ format: 'uuid' }), name: t.String() }),
})
