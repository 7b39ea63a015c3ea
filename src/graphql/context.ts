/**
 * What every resolver gets: the application context, the caller's credential (null for an
 * anonymous caller, who only reaches the schema and `apiVersion`), and this request's loaders.
 * `allow` is the one permission check: the REST operation a field stands for decides, with the
 * same allow-list of connection keys as the REST API and the MCP tools.
 */
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { credentialMayCall } from '../http/credential-scope'
import { errors } from '../errors'
import { requireX402 } from '../x402/access'
import type { Loaders } from './loaders'

export interface GqlContext {
  ctx: AppContext
  auth: Auth | null
  request: Request
  loaders: Loaders
  /** the x402 entitlement, read once per request when a payment field asks */
  x402?: Promise<void>
}

/**
 * The credential, if it may perform the REST read `GET path` (an Elysia-style path with sample
 * ids): unauthorized without one, forbidden for a connection key outside its allow-list.
 */
export function allow(g: GqlContext, path: string, what: string): Auth {
  if (!g.auth) throw errors.unauthorized('authorization: a bearer credential is needed to read data; anonymous callers see the schema only')
  if (g.auth.method === 'connection' && !credentialMayCall(g.auth, 'GET', path)) {
    throw errors.forbidden(`connection key: may not read ${what}; it reads only the mail of ${g.auth.boundAddress}`)
  }
  return g.auth
}

/** `allow` plus the x402_payments entitlement (as every /v1/x402 route). */
export async function allowPayments(g: GqlContext, path: string, what: string): Promise<Auth> {
  const auth = allow(g, path, what)
  await (g.x402 ??= requireX402(g.ctx, auth.orgId))
  return auth
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** An `ID!` argument that must be one of our UUIDs: validation_error naming the argument otherwise. */
export function uuidArg(name: string, value: string): string {
  if (!UUID.test(value)) throw errors.validation(name, 'must be a UUID')
  return value.toLowerCase()
}
