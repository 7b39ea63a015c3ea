/**
 * The one place that reads the environment. Every setting the service knows is in
 * `ConfigSchema`; `loadConfig` checks them all at once and names each bad key.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { availableParallelism } from 'node:os'

const Port = (fallback: number, description: string) => T.Integer({ minimum: 0, maximum: 65535, default: fallback, description })
const Roles = ['api', 'smtp', 'worker'] as const
export type Role = (typeof Roles)[number]

export const ConfigSchema = T.Object({
  NODE_ENV: T.Union([T.Literal('development'), T.Literal('production'), T.Literal('test')], { default: 'development' }),
  PORT: Port(3000, 'HTTP port of the api role; without it, of the health listener (GET /v1/health)'),
  SMTP_PORT: Port(2525, 'port of the inbound SMTP listener'),
  HOST: T.Optional(T.String({ minLength: 1, description: 'address the HTTP and SMTP listeners bind to; unset = 0.0.0.0 in production, 127.0.0.1 otherwise' })),
  DATABASE_URL: T.Optional(T.String({ pattern: '^postgres(ql)?://', description: 'PostgreSQL URL; unset = embedded PGlite under DATA_DIR' })),
  DATABASE_REPLICA_URL: T.Optional(
    T.String({
      pattern: '^postgres(ql)?://',
      description:
        'a streaming replica of DATABASE_URL for reads (lists, reads, search, threads, GraphQL queries, the changes feed); unset = every read on the primary',
    }),
  ),
  REPLICA_MAX_LAG_MS: T.Integer({
    minimum: 100,
    default: 2000,
    description: 'reads go to the replica only while it has replayed everything the primary had committed this long ago (and everything the caller wrote)',
  }),
  DATA_DIR: T.String({ default: '.data', description: 'where the embedded database and development files live' }),
  EMBEDDED_PG_PORT: Port(0, 'loopback port of the embedded PGlite socket; 0 = any free port'),
  ROLES: T.String({
    default: 'api,smtp,worker',
    pattern: '^(api|smtp|worker)(,(api|smtp|worker))*$',
    description: 'comma-separated roles this process runs: api, smtp, worker',
  }),
  PUBLIC_URL: T.String({ default: 'http://localhost:3000', pattern: '^https?://[^/]+$', description: 'public origin of the HTTP API, without /v1' }),
  SITE_URL: T.Optional(T.String({ pattern: '^https?://[^/]+$', description: 'public site serving discovery documents; defaults to PUBLIC_URL' })),
  MANAGED_DOMAIN: T.String({ default: 'agents.localhost', pattern: '^[a-z0-9.-]+$', description: 'domain of managed agent inbox addresses' }),
  SMTP_HOSTNAME: T.String({ default: 'localhost', description: 'name the SMTP listener announces' }),
  SMTP_MAX_MESSAGE_BYTES: T.Integer({ minimum: 1024, default: 26_214_400, description: 'largest inbound message (SIZE); 552 5.3.4 beyond' }),
  SMTP_MAX_RECIPIENTS: T.Integer({ minimum: 1, default: 100, description: 'recipients per SMTP transaction; 452 4.5.3 beyond' }),
  SMTP_MAX_CONNECTIONS: T.Integer({ minimum: 1, default: 500, description: 'concurrent SMTP connections; 421 beyond' }),
  SMTP_PROCESSES: T.Optional(
    T.Integer({
      minimum: 1,
      maximum: 256,
      description: 'processes running the smtp role on SMTP_PORT (reusePort; needs DATABASE_URL); unset = the number of cores',
    }),
  ),
  INBOUND_THREADS: T.Optional(
    T.Integer({
      minimum: 1,
      maximum: 64,
      description: 'worker threads per process that parse, authenticate and extract received mail; unset = the number of cores less one (at least one)',
    }),
  ),
  SMTP_CHILD: T.Boolean({ default: false, description: 'set by the service on the extra smtp processes it starts (SMTP_PROCESSES); not an operator setting' }),
  SMTP_TLS_CERT_FILE: T.Optional(T.String({ description: 'PEM certificate chain for STARTTLS; unset = no STARTTLS' })),
  SMTP_TLS_KEY_FILE: T.Optional(T.String({ description: 'PEM private key for STARTTLS' })),
  SECRET_KEY: T.Optional(
    T.String({ minLength: 32, description: 'server secret for cursors, download tokens and encryption at rest; unset = generated under DATA_DIR' }),
  ),
  DNS_SERVERS: T.Optional(
    T.String({ pattern: '^[^,\\s]+(,[^,\\s]+)*$', description: 'comma-separated host:port DNS servers for every lookup; unset = the system resolver' }),
  ),
  DNS_CACHE_SECONDS: T.Integer({
    minimum: 0,
    maximum: 3600,
    default: 30,
    description: 'how long DNS answers (and "no such record") are kept; 0 = ask every time',
  }),
  WEBHOOK_ALLOW_LOOPBACK: T.Boolean({
    default: false,
    description: 'allow webhook URLs on 127.0.0.0/8, localhost and ::1 (development); never other private ranges',
  }),
  WEBHOOK_TIMEOUT_MS: T.Integer({ minimum: 100, maximum: 60_000, default: 10_000, description: 'time a webhook receiver has to answer one attempt' }),
  WEBHOOK_RETRY_SCHEDULE: T.String({
    default: '30,120,600,1800,3600,7200,14400,28800,28800',
    pattern: '^\\d+(,\\d+)*$',
    description: 'seconds between webhook attempts after a failure; one attempt more than entries (default: 10 attempts over about 24 hours)',
  }),
  SMTP_RELAY_URL: T.Optional(
    T.String({
      pattern: '^smtps?://',
      description:
        'outbound SMTP relay, smtp://user:pass@host:port (STARTTLS when offered) or smtps:// (implicit TLS); unset = local delivery and the local outbox',
    }),
  ),
  RELAY_TIMEOUT_MS: T.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 30_000,
    description: 'outbound relay connection, greeting and socket inactivity timeout',
  }),
  TRUST_PROXY: T.Boolean({ default: false, description: 'take the client address from X-Forwarded-For (behind a load balancer)' }),
  LOG_LEVEL: T.Union([T.Literal('debug'), T.Literal('info'), T.Literal('warn'), T.Literal('error'), T.Literal('silent')], { default: 'info' }),
  LOG_FORMAT: T.Union([T.Literal('json'), T.Literal('text')], {
    default: 'json',
    description: 'json: one object per line, for machines; text: short lines for a person, without routine lines (make dev)',
  }),
  MAX_BODY_BYTES: T.Integer({
    minimum: 1024,
    default: 1_048_576,
    description: 'largest request body of a route that does not ask for more (send-mail accepts 16 MiB for its attachments)',
  }),
  RATE_LIMIT_LEASE: T.Integer({
    minimum: 1,
    maximum: 1000,
    default: 20,
    description:
      'requests a process takes from the shared counter at once (twice as many while each lease is spent within 100 ms, as many again within a second, up to 50 times this)',
  }),
  FUNCTION_CPU_MS: T.Integer({
    minimum: 10,
    maximum: 600_000,
    default: 30_000,
    description: 'CPU time one function invocation may use (time spent running guest code)',
  }),
  FUNCTION_WALL_CLOCK_MS: T.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 600_000,
    description: 'wall-clock time of one function invocation, I/O waits included; beyond it the run is canceled (function_timeout)',
  }),
  FUNCTION_THREADS: T.Integer({
    minimum: 1,
    maximum: 64,
    default: 8,
    description:
      'sandbox threads per process running function invocations, started as runs need them; more than one organization may hold, so that another tenant always finds one',
  }),
  FUNCTION_ORG_THREADS: T.Integer({
    minimum: 1,
    maximum: 64,
    default: 2,
    description: "sandbox threads one organization's runs may hold at once in a process (a thread runs one organization's sandboxes at a time)",
  }),
  FUNCTION_ORG_CONCURRENCY: T.Integer({
    minimum: 1,
    maximum: 1000,
    default: 8,
    description:
      "function runs of one organization in flight at once in a process, each with up to 128 MiB; the rest wait in its queue, served round robin with other organizations' queues",
  }),
  X402_RPC_URL_BASE: T.Optional(
    T.String({
      pattern: '^https?://',
      description: 'JSON-RPC endpoint of base (chain 8453) for x402 chain reads and direct settlement; unset = payments on base cannot settle',
    }),
  ),
  X402_RPC_URL_BASE_SEPOLIA: T.Optional(
    T.String({ pattern: '^https?://', description: 'JSON-RPC endpoint of base-sepolia (chain 84532); unset = payments on base-sepolia cannot settle' }),
  ),
  X402_FACILITATOR_URL_BASE: T.Optional(
    T.String({
      pattern: '^https?://',
      description: 'x402 HTTP facilitator (/verify, /settle) for base; unset = settle directly over JSON-RPC with X402_SETTLER_PRIVATE_KEY',
    }),
  ),
  X402_FACILITATOR_URL_BASE_SEPOLIA: T.Optional(
    T.String({ pattern: '^https?://', description: 'x402 HTTP facilitator for base-sepolia; unset = direct JSON-RPC settlement' }),
  ),
  X402_SETTLER_PRIVATE_KEY: T.Optional(
    T.String({
      pattern: '^0x[0-9a-fA-F]{64}$',
      description: 'key of the account that pays gas for direct JSON-RPC settlement (it never holds customer funds)',
    }),
  ),
  X402_SETTLEMENT_CONNECTIONS: T.Integer({
    minimum: 1,
    maximum: 200,
    default: 10,
    description:
      'database connections a process keeps apart for x402 settlements in flight, each held across its chain step; more settlements wait for one, the rest of the process never does',
  }),
  EVENT_STREAMS_PER_ORG: T.Integer({
    minimum: 1,
    default: 20,
    description: 'open GET /v1/events/stream connections an organization may hold on one api process; 429 beyond',
  }),
  SHUTDOWN_GRACE_MS: T.Integer({
    minimum: 0,
    default: 8_000,
    description: 'how long SIGTERM waits for in-flight work; the default fits the 10 s container runtimes give before SIGKILL',
  }),
  JOB_LEASE_SECONDS: T.Integer({
    minimum: 1,
    maximum: 600,
    default: 30,
    description: 'a claimed job whose worker has not renewed its lease for this long runs again elsewhere; live workers renew every third of it',
  }),
})

export type Config = Static<typeof ConfigSchema> & {
  HOST: string
  roles: Role[]
  siteUrl: string
  /** processes that run the smtp role on one port: SMTP_PROCESSES, or the cores; 1 on the embedded database */
  smtpProcesses: number
}

/** Environment values are strings; numbers and booleans are converted only when they are well formed. */
function coerce(type: string | undefined, value: string): unknown {
  if (type === 'integer' && /^-?\d+$/.test(value)) return Number(value)
  if (type === 'boolean' && /^(true|false|1|0)$/.test(value)) return value === 'true' || value === '1'
  return value
}

/** One bad setting: its name, the value given (secrets hidden) and what is allowed. */
export interface ConfigProblem {
  key: string
  value: string
  allowed: string
}

/** Names every bad key with its value and what it accepts; no stack is worth printing for it. */
export class ConfigError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super(`invalid configuration:\n${problems.map(p => `  ${p.key}: got ${p.value}; allowed: ${p.allowed}`).join('\n')}`)
  }
}

/** Settings whose value must not be echoed to a terminal or a log. */
const SECRET_KEYS = new Set(['SECRET_KEY'])

/** The value as a message may show it: secrets by length only, passwords in URLs masked. */
function shown(key: string, value: string): string {
  if (SECRET_KEYS.has(key)) return `a value of ${value.length} characters (hidden)`
  return JSON.stringify(value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, '$1***@'))
}

/** What a setting accepts, in words, from its schema. */
// biome-ignore lint/suspicious/noExplicitAny: JSON Schema nodes of any shape
function allowed(schema: Record<string, any>): string {
  const about = schema.description ? `\n      (${schema.description})` : ''
  if (schema.anyOf) return `one of ${schema.anyOf.map((s: { const: string }) => s.const).join(', ')}${about}`
  if (schema.type === 'boolean') return `true, false, 1 or 0${about}`
  if (schema.type === 'integer') {
    const range = schema.maximum !== undefined ? `from ${schema.minimum ?? 0} to ${schema.maximum}` : `of at least ${schema.minimum ?? 0}`
    return `an integer ${range}${about}`
  }
  const rules = [schema.minLength ? `at least ${schema.minLength} characters` : '', schema.pattern ? `matching ${schema.pattern}` : ''].filter(Boolean)
  return `${rules.length ? `text ${rules.join(', ')}` : 'text'}${about}`
}

/** Checks the environment against `ConfigSchema`; throws one error naming every bad key. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {}
  for (const [key, schema] of Object.entries(ConfigSchema.properties)) {
    const value = env[key]
    if (value === undefined || value === '') continue
    raw[key] = coerce((schema as { type?: string }).type, value)
  }
  const withDefaults = Value.Default(ConfigSchema, raw) as Static<typeof ConfigSchema>
  const bad = new Set([...Value.Errors(ConfigSchema, withDefaults)].map(e => e.path.slice(1)))
  // biome-ignore lint/suspicious/noExplicitAny: JSON Schema nodes of any shape
  const properties = ConfigSchema.properties as Record<string, Record<string, any>>
  const problems = [...bad].map(key => ({ key, value: shown(key, env[key] ?? ''), allowed: allowed(properties[key]!) }))
  // production keeps no generated secret on disk: found here, before the database is touched
  if (withDefaults.NODE_ENV === 'production' && !withDefaults.SECRET_KEY && !bad.has('SECRET_KEY')) {
    problems.push({ key: 'SECRET_KEY', value: 'nothing', allowed: `required when NODE_ENV is production: ${allowed(properties.SECRET_KEY!)}` })
  }
  if (withDefaults.DATABASE_REPLICA_URL && !withDefaults.DATABASE_URL) {
    problems.push({
      key: 'DATABASE_REPLICA_URL',
      value: shown('DATABASE_REPLICA_URL', withDefaults.DATABASE_REPLICA_URL),
      allowed: 'unset without DATABASE_URL: it is a replica of that primary',
    })
  }
  if (problems.length) throw new ConfigError(problems)
  const roles = [...new Set(withDefaults.ROLES.split(','))] as Role[]
  // A development machine's service answers this machine only, unless HOST says otherwise.
  const HOST = withDefaults.HOST ?? (withDefaults.NODE_ENV === 'production' ? '0.0.0.0' : '127.0.0.1')
  const smtpProcesses = withDefaults.DATABASE_URL ? (withDefaults.SMTP_PROCESSES ?? availableParallelism()) : 1
  return { ...withDefaults, HOST, roles, siteUrl: withDefaults.SITE_URL ?? withDefaults.PUBLIC_URL, smtpProcesses }
}
