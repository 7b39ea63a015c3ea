/** What every feature needs, built once per process (or per app instance in tests). */
import type { Config } from './config'
import type { ServerKeys } from './crypto'
import type { Sql } from './db/client'
import { Cursors } from './http/pagination'
import { RateLimiter } from './http/rate-limit'
import { CredentialCache } from './auth/credentials'
import { cachingResolver, systemResolver, type Resolver } from './dns/resolver'
import { MailEvents } from './mail/events'
import { inboundCommits, type InboundCommits } from './mail/inbound/ingest'

export interface AppContext {
  config: Config
  sql: Sql
  keys: ServerKeys
  cursors: Cursors
  limiter: RateLimiter
  credentials: CredentialCache
  /** every DNS lookup of the service goes through this */
  resolver: Resolver
  mailEvents: MailEvents
  /** stores inbound mail of concurrent SMTP sessions in shared transactions (group commit) */
  readonly inboundCommits: InboundCommits
  startedAt: number
}

/** The system's resolvers or DNS_SERVERS, behind a cache of DNS_CACHE_SECONDS (0: none). */
export function defaultResolver(config: Config): Resolver {
  const system = systemResolver(config.DNS_SERVERS?.split(',') ?? [])
  return config.DNS_CACHE_SECONDS ? cachingResolver(system, config.DNS_CACHE_SECONDS * 1000) : system
}

export function createContext(config: Config, sql: Sql, keys: ServerKeys, opts: { resolver?: Resolver } = {}): AppContext {
  let commits: InboundCommits | undefined
  const ctx: AppContext = {
    config,
    sql,
    keys,
    cursors: new Cursors(keys),
    limiter: new RateLimiter(sql, config.RATE_LIMIT_LEASE),
    credentials: new CredentialCache(sql),
    resolver: opts.resolver ?? defaultResolver(config),
    mailEvents: new MailEvents(),
    // built on first use: its batches write through the context it belongs to
    get inboundCommits() {
      return (commits ??= inboundCommits(ctx))
    },
    startedAt: Date.now(),
  }
  return ctx
}
