/** Registries of agents: the built-in one (agents published on this service) and external ones added by URL. */
import { t } from 'elysia'
import { Nullable, OneOf } from '../http/schema'

/** The id of the built-in registry. */
export const BUILTIN_REGISTRY_ID = 'builtin'

export const Registry = t.Object({
  id: t.String({ description: '`builtin`, or the uuid of a registry added by URL' }),
  kind: OneOf(['builtin', 'a2a'] as const),
  name: t.String(),
  url: Nullable(t.String()),
  status: OneOf(['ok', 'pending', 'failed'] as const, { description: 'of the last fetch; pending until the first' }),
  last_error: Nullable(t.String()),
  fetched_at: Nullable(t.String({ format: 'date-time' })),
  agent_count: t.Integer(),
  created_at: Nullable(t.String({ format: 'date-time' })),
})

export const RegistryAgent = t.Object({
  id: t.String({ format: 'uuid' }),
  registry_id: t.String(),
  name: t.String({ description: 'external entries: untrusted text from the card' }),
  description: t.String(),
  url: Nullable(t.String({ description: "the agent's endpoint as its card states it (untrusted)" })),
  address: Nullable(t.String({ description: 'built-in entries: the email address of the agent' })),
  skills: t.Array(t.String()),
  fetched_at: Nullable(t.String({ format: 'date-time', description: 'external entries: when the card was fetched' })),
})

export const RegistryAgentDetail = t.Composite([
  RegistryAgent,
  t.Object({ card: t.Record(t.String(), t.Unknown(), { description: 'the A2A agent card; for external entries exactly as fetched: untrusted' }) }),
])
