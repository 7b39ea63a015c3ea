/**
 * A2A agent cards: the card this service publishes for a public agent, and the reading of cards
 * fetched from elsewhere. A fetched card is untrusted text: only strings of bounded length are
 * kept from its fields, control characters removed; the card itself is kept as fetched (minus
 * NUL characters, which PostgreSQL's jsonb refuses) and returned only as data.
 */
import type { Config } from '../config'
import { agentCardUrl } from '../networks/publishing'
import type { PublishedAgentRow } from '../networks/published-agents-queries'

export const A2A_PROTOCOL_VERSION = '0.3.0'

/** The agent card of a published address: the agent speaks email, so its endpoint is a mailto: URL. */
export function agentCard(config: Config, agent: PublishedAgentRow) {
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: agent.display_name,
    description: agent.description,
    url: `mailto:${agent.address}`,
    preferredTransport: 'email',
    version: agent.updated_at.toISOString(),
    documentationUrl: agentCardUrl(config, agent.address),
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ['text/plain', 'message/rfc822'],
    defaultOutputModes: ['text/plain', 'message/rfc822'],
    skills: agent.skills.map(id => ({ id, name: id, description: id, tags: [id] })),
  }
}

export interface CardEntry {
  name: string
  description: string
  url: string | null
  skills: string[]
  card: Record<string, unknown>
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g

/** A string field of untrusted input, or null: control and bidi characters removed, cut to `max`. */
function text(value: unknown, max: number): string | null {
  if (typeof value !== 'string') return null
  const clean = value.replace(CONTROL, '').trim()
  return clean ? clean.slice(0, max) : null
}

const MAX_SKILLS = 50

/** What we keep of one fetched card; null when it is not an agent card (no name). */
export function readCard(value: unknown): CardEntry | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null
  const c = value as Record<string, unknown>
  const name = text(c.name, 200)
  if (!name) return null
  const skills = Array.isArray(c.skills)
    ? c.skills
        .flatMap(s => (s && typeof s === 'object' ? [text((s as Record<string, unknown>).id, 64) ?? text((s as Record<string, unknown>).name, 64)] : []))
        .filter((s): s is string => s !== null)
        .map(s => s.toLowerCase())
        .slice(0, MAX_SKILLS)
    : []
  const url = text(c.url, 2000)
  return {
    name,
    description: text(c.description, 2000) ?? '',
    url,
    skills: [...new Set(skills)],
    card: JSON.parse(JSON.stringify(c).replaceAll('\\u0000', '')),
  }
}

/**
 * The cards of a registry document: one agent card, a JSON array of cards, or an object whose
 * `agents` is one. Entries that are not cards are skipped.
 */
export function readRegistryDocument(document: unknown, max: number): CardEntry[] {
  const list = Array.isArray(document)
    ? document
    : document && typeof document === 'object' && Array.isArray((document as { agents?: unknown }).agents)
      ? (document as { agents: unknown[] }).agents
      : [document]
  return list
    .slice(0, max)
    .map(readCard)
    .filter((c): c is CardEntry => c !== null)
}
