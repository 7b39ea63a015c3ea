/**
 * The CLI's HTTP client: the service URL and credential to use, the v1 envelope unwrapped, OAuth
 * tokens refreshed before they expire (the refresh token is single use, so the new pair is saved
 * at once), and failures turned into CliErrors carrying the service's code, message and docs_url
 * with an exit code that says what kind of failure it was.
 */
import { readCredentials, writeCredentials, type Credentials } from './config'

export const DEFAULT_URL = 'http://localhost:3000'
/** The first-party OAuth client of the CLI login (src/cli on the service). */
export const CLI_CLIENT_ID = 'cli'
const REFRESH_MARGIN_MS = 60_000

/** Exit codes (docs/cli.md). */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  auth: 3,
  notFound: 4,
  retryLater: 5,
  unreachable: 6,
} as const

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly code?: string,
    readonly docsUrl?: string,
    readonly body?: unknown,
  ) {
    super(message)
  }
}

export interface GlobalOptions {
  url?: string
  apiKey?: string
  json?: boolean
}

interface ApiErrorBody {
  success: false
  error: { code: string; message: string; details?: Record<string, unknown>; gates?: { docs_url?: string; message?: string }[] }
}

function exitCodeFor(status: number): number {
  if (status === 401) return EXIT.auth
  if (status === 404) return EXIT.notFound
  if (status === 429 || status === 503) return EXIT.retryLater
  return EXIT.error
}

export function errorFrom(status: number, body: unknown): CliError {
  const e = (body as ApiErrorBody | null)?.error
  if (!e || typeof e.code !== 'string') return new CliError(`the service answered HTTP ${status}`, exitCodeFor(status), undefined, undefined, body)
  const docs = (e.details?.docs_url as string | undefined) ?? e.gates?.find(g => g.docs_url)?.docs_url
  const gates = e.gates
    ?.map(g => g.message)
    .filter(Boolean)
    .join('; ')
  return new CliError(gates ? `${e.message} (${gates})` : e.message, exitCodeFor(status), e.code, docs, body)
}

export class Api {
  readonly baseUrl: string
  private credentials: Credentials | null

  constructor(
    private readonly options: GlobalOptions,
    private readonly env = process.env,
  ) {
    this.credentials = options.apiKey || env.AGENT_MAIL_API_KEY ? null : readCredentials(env)
    this.baseUrl = (options.url ?? env.AGENT_MAIL_URL ?? this.credentials?.base_url ?? DEFAULT_URL).replace(/\/+$/, '')
  }

  /** The bearer to send: an explicit API key, else the saved login (refreshed when due). */
  async bearer(): Promise<string> {
    const key = this.options.apiKey ?? this.env.AGENT_MAIL_API_KEY
    if (key) return key
    const c = this.credentials
    if (!c) throw new CliError('not logged in: run `agent-mail login`, or pass --api-key (or set AGENT_MAIL_API_KEY)', EXIT.auth)
    if (c.expires_at - REFRESH_MARGIN_MS > Date.now()) return c.access_token
    return (await this.refresh()).access_token
  }

  /** Exchanges the saved refresh token for a new pair and saves it. */
  async refresh(): Promise<Credentials> {
    const c = this.credentials!
    const res = await this.fetch('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', client_id: CLI_CLIENT_ID, refresh_token: c.refresh_token }),
    })
    const body = (await res.json().catch(() => null)) as {
      access_token?: string
      refresh_token?: string
      expires_in?: number
      error_description?: string
    } | null
    if (!res.ok || !body?.access_token) {
      throw new CliError(
        `the saved login could not be refreshed (${body?.error_description ?? `HTTP ${res.status}`}): run \`agent-mail login\` again`,
        EXIT.auth,
      )
    }
    this.credentials = { ...c, access_token: body.access_token, refresh_token: body.refresh_token!, expires_at: Date.now() + body.expires_in! * 1000 }
    writeCredentials(this.credentials, this.env)
    return this.credentials
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await fetch(`${this.baseUrl}${path}`, init)
    } catch (error) {
      throw new CliError(`cannot reach ${this.baseUrl} (${(error as Error).message})`, EXIT.unreachable)
    }
  }

  /** An API call: JSON in, the envelope's data (and meta) out; errors thrown as CliError. */
  async call<T = any>(
    method: string,
    path: string,
    opts: { body?: unknown; auth?: boolean; headers?: Record<string, string>; signal?: AbortSignal; rawBody?: string | ReadableStream<Uint8Array> } = {},
  ): Promise<{ data: T; meta?: { total: number; limit: number; cursor: string | null }; headers: Headers }> {
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers }
    if (opts.auth !== false) headers.authorization = `Bearer ${await this.bearer()}`
    if (opts.body !== undefined || opts.rawBody !== undefined) headers['content-type'] = 'application/json'
    const res = await this.fetch(path, {
      method,
      headers,
      body: opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
      signal: opts.signal,
    })
    const body = (await res.json().catch(() => null)) as { success?: boolean; data?: T; meta?: never } | null
    if (!res.ok || !body?.success) throw errorFrom(res.status, body)
    return { data: body.data as T, meta: body.meta, headers: res.headers }
  }
}
