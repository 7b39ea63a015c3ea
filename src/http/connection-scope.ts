/**
 * What an agent connection key (`conn_`) may call: Authentication rule 2 of the contract,
 * enforced for every route by `authenticateRequest` (src/http/auth.ts). Deny by default: a
 * route that is not listed here answers 403 forbidden to a connection key, so a new feature is
 * closed to connection keys until it is added below on purpose.
 *
 * Data scoping is the listed routes' own business: they read `auth.boundAddress` (mail reads
 * show only the bound address's mail; send-mail sends only as it).
 */
import type { Auth } from '../auth/principal'
import { errors } from './errors'

export interface ConnectionRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** an Elysia-style path: `:name` matches exactly one non-empty path segment */
  path: string
  /** the path parameter that must equal the key's bound address (exact, case-insensitive) */
  ownAddress?: string
  /** why a connection key may call it */
  why: string
}

/**
 * The allow-list. Routes whose rule depends on more than the path check the rest themselves:
 * network discovery needs the membership's can_view (src/networks/discovery.ts), admission only
 * for the bound address (the body's owner_address), note edits only of notes the bound address
 * authored (src/notes/service.ts). Everything of networks, contacts and registries not listed
 * here (management, publishing, contact reads) stays closed to connection keys.
 */
export const CONNECTION_KEY_ROUTES: readonly ConnectionRoute[] = [
  { method: 'GET', path: '/v1/emails', why: 'mail reads for the bound address' },
  { method: 'GET', path: '/v1/emails/:id', why: 'mail reads for the bound address' },
  { method: 'POST', path: '/v1/send-mail', why: 'sending as the bound address' },
  { method: 'GET', path: '/v1/changes', why: 'the changes of the bound address (the route filters by it)' },
  { method: 'GET', path: '/v1/changes/cursor', why: 'where the feed of the bound address starts now' },
  { method: 'DELETE', path: '/v1/agent-connections/:address', ownAddress: 'address', why: 'exact-address self-disconnect' },
  { method: 'GET', path: '/v1/networks', why: 'network discovery: the networks it may browse (active, can_view)' },
  { method: 'GET', path: '/v1/networks/:id/agents', why: 'network discovery when the membership has can_view' },
  { method: 'POST', path: '/v1/networks/:id/agents/:agent_id/admit', why: 'recipient-bound network contact admission: as a contact of the bound address only' },
  { method: 'GET', path: '/v1/address-notes', why: 'organization address-note reads' },
  { method: 'GET', path: '/v1/address-notes/:id', why: 'organization address-note reads' },
  { method: 'POST', path: '/v1/address-notes', why: 'writing notes authored by the bound address' },
  { method: 'PATCH', path: '/v1/address-notes/:id', why: 'editing notes authored by the bound address only' },
  { method: 'DELETE', path: '/v1/address-notes/:id', why: 'deleting notes authored by the bound address only' },
]

interface Compiled {
  route: ConnectionRoute
  pattern: RegExp
  names: string[]
}

const compiled: Compiled[] = CONNECTION_KEY_ROUTES.map(route => {
  const names: string[] = []
  const source = route.path
    .split('/')
    .map(part => {
      if (!part.startsWith(':')) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      names.push(part.slice(1))
      return '([^/]+)'
    })
    .join('/')
  return { route, pattern: new RegExp(`^${source}$`), names }
})

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment)
  } catch {
    return null
  }
}

/**
 * Whether a connection key may call the operation `method path` at all, its address aside: the
 * MCP tools ask this of the REST operation each one is, so both surfaces share one allow-list.
 */
export function connectionMayCall(method: string, path: string): boolean {
  return compiled.some(c => c.route.method === method && c.pattern.test(path))
}

/** Throws 403 forbidden unless a connection key may make this request; other credentials pass. */
export function checkConnectionScope(auth: Auth, request: Request): void {
  if (auth.method !== 'connection') return
  const method = request.method.toUpperCase()
  const path = new URL(request.url).pathname
  for (const { route, pattern, names } of compiled) {
    if (route.method !== method) continue
    const match = pattern.exec(path)
    if (!match) continue
    if (!route.ownAddress) return
    const value = decode(match[names.indexOf(route.ownAddress) + 1]!)
    if (value !== null && value.trim().toLowerCase() === auth.boundAddress) return
    throw errors.forbidden(`connection key: acts only for ${auth.boundAddress}`)
  }
  throw errors.forbidden(`connection key: may not call ${method} ${path}; it is limited to mail reads, sending, the changes feed, network discovery and admission, address notes and disconnecting for ${auth.boundAddress}`)
}
