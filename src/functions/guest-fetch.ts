/**
 * What a guest's `fetch` reaches. Calls to the service's own API (SERVICE_API_BASE_URL) are
 * served in-process by the application, under the function's runtime key, and attributed to the
 * invocation: a send becomes an `email.sent` or `email.replied` activity entry. Every other URL
 * goes through the webhooks' SSRF guard (public addresses only; loopback only with
 * WEBHOOK_ALLOW_LOOPBACK), connecting to the address that was checked, without following
 * redirects, within SUBREQUEST_TIMEOUT_MS, reading at most RESPONSE_BYTES of the answer.
 *
 * A dry run has no side effects: sends are captured and answered as if accepted, other writes
 * to the API and requests other than GET and HEAD to other services are refused (403), reads are
 * served.
 *
 * An in-process call has no peer address, so every function would share one client address for
 * the limit of unauthenticated requests: its address is its organization's instead
 * (`functionsAddress`), so one tenant's functions cannot use up another's.
 */
import { isIP } from 'node:net'
import { randomUUIDv7 } from 'bun'
import { perProcess, type AppContext } from '../context'
import { checkWebhookUrl, type CheckedUrl } from '../egress/url-safety'
import { noteListened } from '../request-context'
import { RESPONSE_BYTES, SUBREQUEST_TIMEOUT_MS } from './limits'
import type { FetchAnswer, GuestFetch } from './sandbox/protocol'

export interface ActivityEntry {
  type: 'email.sent' | 'email.replied'
  email_id: string
  at: Date
}

export interface CapturedSend {
  request: unknown
}

/** What one invocation's fetches collect. */
export interface FetchScope {
  /** the organization whose function fetches */
  orgId: string
  dryRun: boolean
  activity: ActivityEntry[]
  captured: CapturedSend[]
}

export type Handler = (request: Request) => Promise<Response>

/**
 * The application serving in-process API calls, handed over by whoever composes the process
 * (src/roles.ts; the tests' harness): functions never import the application, which imports them.
 */
const apiHandlers = perProcess((): { get?: () => Promise<Handler> } => ({}))

/**
 * Hands this context's API to its functions' in-process calls. `get` runs on the first call,
 * once (a process of the worker role builds its application only when a function calls the API).
 */
export function serveApiCallsWith(ctx: AppContext, get: () => Promise<Handler>): void {
  let handler: Promise<Handler> | undefined
  apiHandlers(ctx).get = () => (handler ??= get())
}

function apiHandler(ctx: AppContext): Promise<Handler> {
  const { get } = apiHandlers(ctx)
  if (!get) throw new Error('in-process API calls: no API was handed to this context (serveApiCallsWith)')
  return get()
}

const fromBase64 = (body: string | null) => (body === null ? undefined : Buffer.from(body, 'base64'))

async function readAtMost(res: Response, max: number): Promise<Buffer | null> {
  if (!res.body) return Buffer.alloc(0)
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body) {
    chunks.push(chunk)
    size += chunk.length
    if (size > max) return null
  }
  return Buffer.concat(chunks)
}

async function answer(res: Response, url: string): Promise<FetchAnswer> {
  const body = await readAtMost(res, RESPONSE_BYTES)
  if (body === null) return { error: `the response of ${url} is larger than ${RESPONSE_BYTES} bytes` }
  return { status: res.status, statusText: res.statusText, headers: [...res.headers], body: body.toString('base64'), url, redirected: false }
}

/** the methods a dry run sends on: reads, which change nothing where they go */
const READS = new Set(['GET', 'HEAD'])

/** The client address of an organization's functions calling the API in-process: one per organization, as its per-organization limit is. */
export const functionsAddress = (orgId: string) => `functions:${orgId}`

function isApiCall(ctx: AppContext, url: URL): boolean {
  return url.origin === new URL(ctx.config.PUBLIC_URL).origin && (url.pathname === '/v1' || url.pathname.startsWith('/v1/'))
}

async function apiCall(ctx: AppContext, scope: FetchScope, url: URL, arg: GuestFetch): Promise<FetchAnswer> {
  const method = arg.method.toUpperCase()
  const isSend = method === 'POST' && url.pathname.replace(/\/$/, '') === '/v1/send-mail'
  if (scope.dryRun && !READS.has(method)) {
    if (!isSend) return json(403, { success: false, error: { code: 'forbidden', message: 'dry run: writes to the API are not performed' } }, url.href)
    const request = safeJson(fromBase64(arg.body))
    scope.captured.push({ request })
    const id = randomUUIDv7()
    return json(200, { success: true, data: { id, status: 'captured', dry_run: true } }, url.href)
  }
  const headers = new Headers(arg.headers)
  // no proxy stands between the function and the API: an address it forwards is its own invention
  headers.delete('x-forwarded-for')
  const request = new Request(url.href, { method, headers, body: method === 'GET' || method === 'HEAD' ? undefined : fromBase64(arg.body) })
  noteListened(request, { address: functionsAddress(scope.orgId) })
  const res = await (await apiHandler(ctx))(request)
  const out = await answer(res, url.href)
  if (isSend && res.status === 200 && out.error === undefined && out.body) {
    const sent = safeJson(Buffer.from(out.body, 'base64')) as { data?: { id?: string } } | null
    const request = safeJson(fromBase64(arg.body)) as { in_reply_to_email_id?: string } | null
    if (sent?.data?.id) scope.activity.push({ type: request?.in_reply_to_email_id ? 'email.replied' : 'email.sent', email_id: sent.data.id, at: new Date() })
  }
  return out
}

function safeJson(bytes: Buffer | undefined): unknown {
  try {
    return bytes ? JSON.parse(bytes.toString('utf8')) : null
  } catch {
    return null
  }
}

function json(status: number, body: unknown, url: string): FetchAnswer {
  return {
    status,
    statusText: '',
    headers: [['content-type', 'application/json']],
    body: Buffer.from(JSON.stringify(body)).toString('base64'),
    url,
    redirected: false,
  }
}

/** Serves one guest fetch; never throws (an error answer becomes a TypeError in the guest). */
export async function serveGuestFetch(ctx: AppContext, scope: FetchScope, arg: GuestFetch): Promise<FetchAnswer> {
  let url: URL
  try {
    url = new URL(arg.url)
  } catch {
    return { error: `invalid URL ${arg.url}` }
  }
  try {
    if (isApiCall(ctx, url)) return await apiCall(ctx, scope, url, arg)
    if (scope.dryRun && !READS.has(arg.method.toUpperCase())) {
      return json(
        403,
        { success: false, error: { code: 'forbidden', message: `dry run: ${arg.method.toUpperCase()} requests to other services are not sent` } },
        url.href,
      )
    }
    let target: CheckedUrl
    try {
      target = await checkWebhookUrl(url.href, ctx.resolver, ctx.config.WEBHOOK_ALLOW_LOOPBACK)
    } catch (error) {
      return { error: `${url.host} refused: ${(error as Error).message.replace(/^url: /, '')}` }
    }
    const direct = new URL(target.url)
    direct.hostname = target.family === 6 ? `[${target.address}]` : target.address
    const name = target.url.hostname.replace(/^\[|\]$/g, '')
    const headers = new Headers(arg.headers)
    headers.set('host', target.url.host)
    const res = await fetch(direct, {
      method: arg.method,
      headers,
      body: fromBase64(arg.body),
      // a redirect is handed to the guest, whose next fetch is checked again
      redirect: 'manual',
      signal: AbortSignal.timeout(SUBREQUEST_TIMEOUT_MS),
      tls: isIP(name) ? undefined : { serverName: name },
      proxy: false,
    } as RequestInit)
    return await answer(res, url.href)
  } catch (error) {
    return { error: (error as Error).name === 'TimeoutError' ? `no answer within ${SUBREQUEST_TIMEOUT_MS} ms` : (error as Error).message }
  }
}
