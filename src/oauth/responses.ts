/**
 * What the OAuth endpoints answer with: RFC 6749 JSON bodies (`{error, error_description}` on
 * failure, never the v1 envelope), their rate limits and their form bodies. Handlers return
 * these Responses directly, so the app's envelope and error hooks leave them alone.
 */
import type { AppContext } from '../context'
import { clientAddress } from '../http/auth'
import { rateLimiter } from '../http/rate-limit'

export const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' }
/** Public clients hold no secret and send no cookies here, so any origin may call the JSON endpoints. */
export const CORS = { 'access-control-allow-origin': '*' }

export type Server = Parameters<typeof clientAddress>[2]

export function oauthJson(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json;charset=utf-8', ...NO_STORE, ...CORS, ...headers },
  })
}

/** An RFC 6749 section 5.2 (or RFC 7591 section 3.2.2) error body. */
export function oauthError(error: string, description: string, status = 400, headers: Record<string, string> = {}): Response {
  return oauthJson({ error, error_description: description }, status, headers)
}

/** Spends one request of a per-address bucket; returns the Retry-After seconds when refused. */
export async function throttle(ctx: AppContext, request: Request, server: Server, name: string, perMinute: number): Promise<number | null> {
  return throttleKey(ctx, `${name}:${clientAddress(ctx, request, server)}`, perMinute)
}

export async function throttleKey(ctx: AppContext, key: string, perMinute: number): Promise<number | null> {
  const decision = await rateLimiter(ctx).take(`oauth:${key}`, perMinute)
  if (decision.allowed) return null
  return Math.max(1, Math.ceil((decision.resetAt - Date.now()) / 1000))
}

/** The rate-limited answer of an OAuth endpoint: `slow_down` with Retry-After. */
export function slowDown(retryAfter: number, status = 400): Response {
  return oauthError('slow_down', `too many requests from this client address; retry after ${retryAfter} seconds`, status, {
    'retry-after': String(retryAfter),
  })
}

const MAX_FORM_BYTES = 16 * 1024

/** The OpenAPI `requestBody` of a route that takes a form: its fields (JSON schemas) and which are required. */
export const formRequestBody = (
  properties: Record<string, { type: 'string'; description?: string; enum?: string[]; maxLength?: number }>,
  required: string[],
) => ({
  required: true,
  content: { 'application/x-www-form-urlencoded': { schema: { type: 'object' as const, required, properties } } },
})

export type Form = Map<string, string>

/**
 * The parameters of an application/x-www-form-urlencoded body. A parameter given twice is an
 * error (RFC 6749 section 3.1); one given without a value counts as omitted. The route parses
 * the body as text, so `body` is the raw string for a form.
 */
export function readForm(request: Request, body: unknown): { form: Form } | { error: string } {
  const type = request.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded' || typeof body !== 'string') {
    return { error: 'the body must be application/x-www-form-urlencoded' }
  }
  if (body.length > MAX_FORM_BYTES) return { error: `the body must be at most ${MAX_FORM_BYTES} bytes` }
  return readParams(new URLSearchParams(body))
}

/** Parameters of a query string or form; each at most once, empty ones dropped. */
export function readParams(params: URLSearchParams, only?: readonly string[]): { form: Form } | { error: string } {
  const form: Form = new Map()
  const seen = new Set<string>()
  for (const [name, value] of params) {
    if (only && !only.includes(name)) continue
    if (seen.has(name)) return { error: `${name}: must be given at most once` }
    seen.add(name)
    if (value !== '') form.set(name, value)
  }
  return { form }
}
