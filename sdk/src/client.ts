/**
 * The client: every operation of the OpenAPI document, typed from src/schema.ts, called through
 * openapi-fetch. Answers come back unwrapped (the envelope's `data`), failures are thrown as
 * AgentMailError, lists page on with their cursor (`for await` over `list()`), and the long-poll
 * of new mail is a loop you can iterate (`watchEmails`) or await once (`waitForEmail`).
 */
import createFetchClient, { type Client, type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch'
import type { PathsWithMethod, RequiredKeysOf } from 'openapi-typescript-helpers'
import { AgentMailError } from './errors.ts'
import type { paths } from './schema.ts'

export type Paths = paths
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete'
export type PathOf<M extends Method> = PathsWithMethod<Paths, M>

/** The success envelope of an operation, as the document declares it. */
export type Envelope<P extends keyof Paths, M extends Method> = NonNullable<
  FetchResponse<Paths[P][M] & Record<string | number, unknown>, object, 'application/json'>['data']
>
/** What an operation answers once unwrapped: the envelope's `data`. */
export type Data<P extends keyof Paths, M extends Method> = Envelope<P, M> extends { data: infer D } ? D : Envelope<P, M>

/** The operations that answer a cursor page (`data` an array, `meta` with the cursor). */
export type ListPath = { [P in PathOf<'get'>]: Envelope<P, 'get'> extends { data: unknown[]; meta: unknown } ? P : never }[PathOf<'get'>]
/** One item of a list operation. */
export type Item<P extends ListPath> = Data<P, 'get'> extends (infer I)[] ? I : never
/** The query parameters of an operation. */
export type Query<P extends keyof Paths, M extends Method> = Paths[P][M] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never

export interface Meta {
  total: number
  limit: number
  cursor: string | null
}

export interface Page<T> extends Meta {
  items: T[]
}

/** What every call takes besides the operation's own params and body. */
export interface CallOptions {
  /** sent as the Idempotency-Key header: a retry with the same key does not repeat the action */
  idempotencyKey?: string
  /** sent as `Prefer: respond-async` (RFC 7240): a send answers 202 once committed, without waiting for the relay (where the operation supports it) */
  respondAsync?: boolean
  /** false: send no credential (signup, the CLI login, the public pages) */
  auth?: boolean
  signal?: AbortSignal
  headers?: Record<string, string>
}

type Init<P extends keyof Paths, M extends Method> = MaybeOptionalInit<Paths[P], M>
/** The second argument: optional when the operation requires nothing. */
type Args<I> = RequiredKeysOf<I> extends never ? [(I & CallOptions)?] : [I & CallOptions]

export interface AgentMailOptions {
  /** the service's origin, without /v1 (default http://localhost:3000) */
  baseUrl?: string
  /** an API key (svc_...), an OAuth access token or a connection key; or a function that returns one for each call (to refresh it) */
  apiKey?: string | (() => string | Promise<string>)
  /** a fetch of your own (a proxy, a test double, a runtime without a global fetch) */
  fetch?: (request: Request) => Promise<Response>
  /** headers sent with every call (a User-Agent, say) */
  headers?: Record<string, string>
}

export const DEFAULT_BASE_URL = 'http://localhost:3000'
/** The service cuts a long-poll at 60 s. */
export const MAX_WAIT_SECONDS = 60

type EmailQuery = Query<'/v1/emails', 'get'>
type EmailSummary = Item<'/v1/emails'>

export class AgentMail {
  /** the openapi-fetch client: envelopes as they come, no credential added (for the OAuth token and revoke endpoints) */
  readonly raw: Client<Paths, 'application/json'>
  readonly baseUrl: string

  constructor(private readonly options: AgentMailOptions = {}) {
    this.baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '')
    this.raw = createFetchClient<Paths, 'application/json'>({ baseUrl: this.baseUrl, fetch: options.fetch, headers: options.headers })
  }

  /** An operation with its whole answer: the envelope's data, its page meta when a list, and the response (for its headers). */
  async request<M extends Method, P extends PathOf<M>, I extends Init<P, M>>(
    method: M,
    path: P,
    ...[init]: Args<I>
  ): Promise<{ data: Data<P, M>; meta?: Meta; response: Response }> {
    const { idempotencyKey, respondAsync, auth, headers, ...rest } = (init ?? {}) as CallOptions & Record<string, unknown>
    const all: Record<string, string> = { ...headers }
    if (idempotencyKey !== undefined) all['idempotency-key'] = idempotencyKey
    if (respondAsync) all.prefer = 'respond-async'
    if (auth !== false && this.options.apiKey) {
      const key = typeof this.options.apiKey === 'function' ? await this.options.apiKey() : this.options.apiKey
      all.authorization = `Bearer ${key}`
    }
    let result: { data?: unknown; error?: unknown; response: Response }
    try {
      result = await (this.raw.request as (m: string, p: string, i: object) => Promise<typeof result>)(method, path, { ...rest, headers: all })
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error
      if (error instanceof SyntaxError)
        throw new AgentMailError('invalid_response', 0, `the answer of ${path} is not JSON`, {}, [], undefined, undefined, { cause: error })
      throw new AgentMailError('network_error', 0, `cannot reach ${this.baseUrl} (${(error as Error).message})`, {}, [], undefined, undefined, { cause: error })
    }
    const { response } = result
    const body = result.data as { success?: boolean; data?: unknown; meta?: Meta } | undefined
    if (!response.ok || body?.success !== true) throw AgentMailError.fromResponse(response, result.error ?? result.data)
    return { data: body.data as Data<P, M>, ...(body.meta && { meta: body.meta }), response }
  }

  async get<P extends PathOf<'get'>, I extends Init<P, 'get'>>(path: P, ...init: Args<I>): Promise<Data<P, 'get'>> {
    return (await this.request('get', path, ...(init as Args<Init<P, 'get'>>))).data
  }

  async post<P extends PathOf<'post'>, I extends Init<P, 'post'>>(path: P, ...init: Args<I>): Promise<Data<P, 'post'>> {
    return (await this.request('post', path, ...(init as Args<Init<P, 'post'>>))).data
  }

  async put<P extends PathOf<'put'>, I extends Init<P, 'put'>>(path: P, ...init: Args<I>): Promise<Data<P, 'put'>> {
    return (await this.request('put', path, ...(init as Args<Init<P, 'put'>>))).data
  }

  async patch<P extends PathOf<'patch'>, I extends Init<P, 'patch'>>(path: P, ...init: Args<I>): Promise<Data<P, 'patch'>> {
    return (await this.request('patch', path, ...(init as Args<Init<P, 'patch'>>))).data
  }

  async delete<P extends PathOf<'delete'>, I extends Init<P, 'delete'>>(path: P, ...init: Args<I>): Promise<Data<P, 'delete'>> {
    return (await this.request('delete', path, ...(init as Args<Init<P, 'delete'>>))).data
  }

  /** One page of a list, with its total and the cursor of the next page (null at the end). */
  async page<P extends ListPath, I extends Init<P, 'get'>>(path: P, ...init: Args<I>): Promise<Page<Item<P>>> {
    const { data, meta, response } = await this.request('get', path, ...(init as Args<Init<P, 'get'>>))
    if (!meta) throw new AgentMailError('invalid_response', response.status, `${path} answered without page meta`)
    return { items: data as Item<P>[], ...meta }
  }

  /** Every item of a list, page after page (`for await (const inbox of mail.list('/v1/inboxes'))`); `limit` is the page size. */
  async *list<P extends ListPath, I extends Init<P, 'get'>>(path: P, ...[init]: Args<I>): AsyncGenerator<Item<P>, void, undefined> {
    const base = (init ?? {}) as { params?: { query?: Record<string, unknown> } }
    let cursor: string | null | undefined
    do {
      const params = { ...base.params, query: { ...base.params?.query, ...(cursor && { cursor }) } }
      const page = await this.page(path, ...([{ ...base, params }] as unknown as Args<Init<P, 'get'>>))
      yield* page.items
      cursor = page.cursor
    } while (cursor)
  }

  /**
   * New mail as it arrives, oldest first, for as long as you iterate: the long-poll of
   * GET /v1/emails (`wait`), from `since` (default now). A burst larger than a page is read
   * whole, page after page, before the next wait. Stop with `break` or the signal.
   */
  async *watchEmails(query: Omit<EmailQuery, 'wait' | 'cursor'> = {}, opts: { waitSeconds?: number; signal?: AbortSignal } = {}): AsyncGenerator<EmailSummary> {
    let since = query.since ?? new Date().toISOString()
    const wait = Math.min(opts.waitSeconds ?? 30, MAX_WAIT_SECONDS)
    for (;;) {
      const first = await this.request('get', '/v1/emails', { params: { query: { ...query, since, wait } }, signal: opts.signal })
      const emails = [...first.data]
      for (let cursor = first.meta?.cursor; cursor; ) {
        const next = await this.request('get', '/v1/emails', { params: { query: { ...query, since, cursor } }, signal: opts.signal })
        emails.push(...next.data)
        cursor = next.meta?.cursor
      }
      if (emails.length) since = emails[0]!.received_at
      yield* emails.reverse()
    }
  }

  /** The first mail to arrive that matches (newest batch, oldest first), or [] when `timeoutSeconds` pass without any. */
  async waitForEmail(query: Omit<EmailQuery, 'wait' | 'cursor'> = {}, opts: { timeoutSeconds?: number; signal?: AbortSignal } = {}): Promise<EmailSummary[]> {
    const deadline = Date.now() + (opts.timeoutSeconds ?? MAX_WAIT_SECONDS) * 1000
    const since = query.since ?? new Date().toISOString()
    for (;;) {
      const left = Math.ceil((deadline - Date.now()) / 1000)
      if (left <= 0) return []
      const emails = await this.get('/v1/emails', { params: { query: { ...query, since, wait: Math.min(left, MAX_WAIT_SECONDS) } }, signal: opts.signal })
      if (emails.length) return [...emails].reverse()
    }
  }
}
