/**
 * What a credential may call, by operation, enforced for every route by `authenticateRequest`
 * (src/http/auth.ts) and for every MCP tool by the REST operation it stands for:
 *
 * - An agent connection key (`conn_`): Authentication rule 2 of the contract. Deny by default:
 *   a route that is not listed in CONNECTION_KEY_ROUTES answers 403 forbidden to a connection
 *   key, so a new feature is closed to connection keys until it is added below on purpose. Data
 *   scoping is the listed routes' own business: they read `auth.boundAddress` (mail reads show
 *   only the bound address's mail; send-mail sends only as it).
 * - A function's runtime key (SERVICE_API_KEY): everything an organization key may, except the
 *   operations that mint a credential (CREDENTIAL_MINTING_ROUTES). Deleting the function revokes
 *   its runtime key; a key or a function it had made would outlive it.
 */
import type { Auth } from '../auth/principal'
import { errors } from '../errors'

export interface ScopedRoute {
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
 * authored (src/notes/service.ts), contact reads only of the bound address's contacts
 * (src/contacts/service.ts). Everything of networks, contacts and registries not listed here
 * (management, publishing, contact writes) stays closed to connection keys.
 */
export const CONNECTION_KEY_ROUTES: readonly ScopedRoute[] = [
  { method: 'GET', path: '/v1/emails', why: 'mail reads for the bound address' },
  { method: 'GET', path: '/v1/emails/:id', why: 'mail reads for the bound address' },
  { method: 'POST', path: '/v1/emails/:id/labels', why: "labels of the bound address's mail (another message is not_found)" },
  { method: 'POST', path: '/v1/emails/labels', why: "labels of the bound address's mail (any other id is not_found)" },
  { method: 'GET', path: '/v1/labels', why: 'the names it may label its mail with' },
  { method: 'POST', path: '/v1/send-mail', why: 'sending as the bound address' },
  { method: 'POST', path: '/v1/send-mail/batch', why: 'sending as the bound address, message by message' },
  { method: 'POST', path: '/v1/emails/:id/forward', why: 'forwarding mail of the bound address, as it (another email is not_found)' },
  { method: 'GET', path: '/v1/drafts', why: 'drafts of the bound address (the route filters by it)' },
  { method: 'POST', path: '/v1/drafts', why: 'drafts from the bound address' },
  { method: 'GET', path: '/v1/drafts/:id', why: 'drafts of the bound address (another is not_found)' },
  { method: 'PATCH', path: '/v1/drafts/:id', why: 'drafts of the bound address (another is not_found)' },
  { method: 'DELETE', path: '/v1/drafts/:id', why: 'drafts of the bound address (another is not_found)' },
  { method: 'POST', path: '/v1/drafts/:id/send', why: 'sending a draft of the bound address (its approval, never: approve and reject are not listed)' },
  { method: 'GET', path: '/v1/changes', why: 'the changes of the bound address (the route filters by it)' },
  { method: 'GET', path: '/v1/changes/cursor', why: 'where the feed of the bound address starts now' },
  { method: 'GET', path: '/v1/events/stream', why: 'the changes of the bound address, pushed (the route filters by it)' },
  { method: 'DELETE', path: '/v1/agent-connections/:address', ownAddress: 'address', why: 'exact-address self-disconnect' },
  { method: 'GET', path: '/v1/networks', why: 'network discovery: the networks it may browse (active, can_view)' },
  { method: 'GET', path: '/v1/networks/:id/agents', why: 'network discovery when the membership has can_view' },
  { method: 'POST', path: '/v1/networks/:id/agents/:agent_id/admit', why: 'recipient-bound network contact admission: as a contact of the bound address only' },
  { method: 'GET', path: '/v1/contacts', why: 'contact reads of the bound address (the route filters by it)' },
  { method: 'GET', path: '/v1/contacts/:id', why: 'contact reads of the bound address (another contact is not_found)' },
  { method: 'GET', path: '/v1/address-notes', why: 'organization address-note reads' },
  { method: 'GET', path: '/v1/address-notes/:id', why: 'organization address-note reads' },
  { method: 'POST', path: '/v1/address-notes', why: 'writing notes authored by the bound address' },
  { method: 'PATCH', path: '/v1/address-notes/:id', why: 'editing notes authored by the bound address only' },
  { method: 'DELETE', path: '/v1/address-notes/:id', why: 'deleting notes authored by the bound address only' },
]

/**
 * The operations that create a credential, directly or with what they create: refused (403) to a
 * function's runtime key. A new operation that mints a key belongs here.
 */
export const CREDENTIAL_MINTING_ROUTES: readonly ScopedRoute[] = [
  { method: 'POST', path: '/v1/api-keys', why: 'creates an API key' },
  { method: 'POST', path: '/v1/functions', why: 'creates a function with a runtime key of its own' },
  { method: 'POST', path: '/v1/templates/install', why: 'may deploy a function, with a runtime key of its own' },
]

interface Compiled {
  route: ScopedRoute
  pattern: RegExp
  names: string[]
}

function compile(routes: readonly ScopedRoute[]): Compiled[] {
  return routes.map(route => {
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
}

const connectionRoutes = compile(CONNECTION_KEY_ROUTES)
const mintingRoutes = compile(CREDENTIAL_MINTING_ROUTES)

const matching = (routes: Compiled[], method: string, path: string) => routes.find(c => c.route.method === method && c.pattern.test(path))

/** A minting route, however the path is spelled: the router takes `/v1/api-keys/` for `/v1/api-keys`. */
const mintingRoute = (method: string, path: string) => matching(mintingRoutes, method, path.length > 1 ? path.replace(/\/+$/, '') : path)

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment)
  } catch {
    return null
  }
}

/**
 * Whether this credential may call the operation `method path` at all, a connection key's address
 * aside: the MCP tools ask this of the REST operation each one is, so both surfaces share the rules.
 */
export function credentialMayCall(auth: Auth, method: string, path: string): boolean {
  if (auth.method === 'connection') return matching(connectionRoutes, method, path) !== undefined
  if (auth.functionId) return mintingRoute(method, path) === undefined
  return true
}

/** Throws 403 forbidden unless this credential may make this request. */
export function checkCredentialScope(auth: Auth, request: Request): void {
  if (auth.method !== 'connection' && !auth.functionId) return
  const method = request.method.toUpperCase()
  const path = new URL(request.url).pathname
  if (auth.functionId) {
    const minting = mintingRoute(method, path)
    if (minting)
      throw errors.forbidden(`function runtime key: may not call ${method} ${minting.route.path}; it ${minting.route.why}, which would outlive the function`)
    return
  }
  for (const { route, pattern, names } of connectionRoutes) {
    if (route.method !== method) continue
    const match = pattern.exec(path)
    if (!match) continue
    if (!route.ownAddress) return
    const value = decode(match[names.indexOf(route.ownAddress) + 1]!)
    if (value !== null && value.trim().toLowerCase() === auth.boundAddress) return
    throw errors.forbidden(`connection key: acts only for ${auth.boundAddress}`)
  }
  throw errors.forbidden(
    `connection key: may not call ${method} ${path}; it is limited to mail reads, sending and its own drafts, the changes feed and its stream, network discovery and admission, address notes and disconnecting for ${auth.boundAddress}`,
  )
}
