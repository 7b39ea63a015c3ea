/**
 * The CLI's connection to the service, through the typed SDK (sdk/, @agent-mail/sdk): the
 * service URL and credential to use, OAuth tokens refreshed before they expire (the refresh
 * token is single use, so the new pair is saved at once), and the SDK's errors turned into
 * CliErrors with an exit code that says what kind of failure it was.
 */
import { AgentMail, type AgentMailError } from '@agent-mail/sdk'
import pkg from '../../package.json'
import { readCredentials, writeCredentials, type Credentials } from './config'

export const DEFAULT_URL = 'http://localhost:3000'
/** The first-party OAuth client of the CLI login (src/cli on the service). */
export const CLI_CLIENT_ID = 'cli'
const REFRESH_MARGIN_MS = 60_000
/** The OAuth endpoints take form-encoded bodies (openapi-fetch encodes the body by this header). */
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

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

function exitCodeFor(error: AgentMailError): number {
  if (error.code === 'network_error') return EXIT.unreachable
  if (error.status === 401) return EXIT.auth
  if (error.status === 404) return EXIT.notFound
  if (error.status === 429 || error.status === 503) return EXIT.retryLater
  return EXIT.error
}

/** How the CLI reports a failure of the service: its message (with the gates' reasons), code and docs. */
export function cliErrorOf(error: AgentMailError): CliError {
  if (error.code === 'invalid_response') return new CliError(`the service answered HTTP ${error.status}`, exitCodeFor(error), undefined, undefined, error.body)
  const gates = error.gates
    .map(g => g.message)
    .filter(Boolean)
    .join('; ')
  return new CliError(gates ? `${error.message} (${gates})` : error.message, exitCodeFor(error), error.code, error.docsUrl, error.body)
}

export class Api {
  readonly baseUrl: string
  /** the typed client; its calls send the bearer of `bearer()` unless told `auth: false` */
  readonly sdk: AgentMail
  private credentials: Credentials | null

  constructor(
    private readonly options: GlobalOptions,
    private readonly env = process.env,
  ) {
    this.credentials = options.apiKey || env.AGENT_MAIL_API_KEY ? null : readCredentials(env)
    // an empty option or variable counts as not given
    this.baseUrl = (options.url || env.AGENT_MAIL_URL || this.credentials?.base_url || DEFAULT_URL).replace(/\/+$/, '')
    this.sdk = new AgentMail({ baseUrl: this.baseUrl, apiKey: () => this.bearer(), headers: { 'user-agent': `agent-mail-cli/${pkg.version}` } })
  }

  /** The bearer to send: an explicit API key, else the saved login (refreshed when due). */
  async bearer(): Promise<string> {
    const key = this.options.apiKey || this.env.AGENT_MAIL_API_KEY
    if (key) return key
    const c = this.credentials
    if (!c) throw new CliError('not logged in: run `agent-mail login`, or pass --api-key (or set AGENT_MAIL_API_KEY)', EXIT.auth)
    if (c.expires_at - REFRESH_MARGIN_MS > Date.now()) return c.access_token
    return (await this.refresh()).access_token
  }

  /** Exchanges the saved refresh token for a new pair and saves it. */
  async refresh(): Promise<Credentials> {
    const c = this.credentials!
    const { data, error, response } = await this.oauth(() =>
      this.sdk.raw.POST('/oauth/token', {
        body: { grant_type: 'refresh_token', client_id: CLI_CLIENT_ID, refresh_token: c.refresh_token },
        headers: FORM,
      }),
    )
    const tokens = data as { access_token?: string; refresh_token?: string; expires_in?: number } | undefined
    if (!response.ok || !tokens?.access_token) {
      const reason = (error as { error_description?: string } | undefined)?.error_description ?? `HTTP ${response.status}`
      throw new CliError(`the saved login could not be refreshed (${reason}): run \`agent-mail login\` again`, EXIT.auth)
    }
    this.credentials = { ...c, access_token: tokens.access_token, refresh_token: tokens.refresh_token!, expires_at: Date.now() + tokens.expires_in! * 1000 }
    writeCredentials(this.credentials, this.env)
    return this.credentials
  }

  /** Revokes a token (RFC 7009: the answer is 200 whatever the token was). */
  async revoke(token: string): Promise<void> {
    await this.oauth(() => this.sdk.raw.POST('/oauth/revoke', { body: { token }, headers: FORM }))
  }

  /** The OAuth endpoints answer RFC 6749's JSON, not the envelope: they go through the SDK's raw client. */
  private async oauth<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call()
    } catch (error) {
      throw new CliError(`cannot reach ${this.baseUrl} (${(error as Error).message})`, EXIT.unreachable)
    }
  }
}
