/**
 * The resources every feature uses (database, configuration, server keys, DNS), built once
 * per process (or per app instance in tests), and `perProcess`, the one way a feature keeps
 * state of its own for as long as the process runs (a batcher, a cache, a connection pool).
 * The context knows no feature: features hang their state on it, never into it, and plug into
 * the core through `plugins`, which the composition root fills.
 */
import type { Config } from './config'
import type { ServerKeys } from './crypto'
import type { Sql } from './db/client'
import { cachingResolver, systemResolver, type Resolver } from './dns/resolver'
import type { CredentialResolver } from './http/auth'
import type { ReceivedMailConsumer, StoreExtension } from './mail/seams'
import type { FunctionDelivery } from './webhooks/attempt'

/**
 * What features plug into the seams the core offers. Each seam is declared (typed) by the core
 * module that calls it; the composition root (src/plugins.ts) fills them once, so the core
 * names no feature.
 */
export interface Plugins {
  /** resolves a bearer token to its credential, for every authenticated route (http/auth.ts) */
  readonly resolveCredential: CredentialResolver
  /** joined to the one statement that stores any message, inbound or sent (mail/store.ts) */
  readonly storeExtensions: readonly StoreExtension[]
  /** acts on each received copy in the transaction that stores it (mail/inbound/ingest.ts) */
  readonly receivedMail: readonly ReceivedMailConsumer[]
  /** delivers a webhook event to an endpoint of kind function (webhooks/attempt.ts) */
  readonly deliverToFunction: FunctionDelivery
}

export interface AppContext {
  readonly config: Config
  readonly sql: Sql
  readonly keys: ServerKeys
  /** every DNS lookup of the service goes through this */
  readonly resolver: Resolver
  readonly plugins: Plugins
  readonly startedAt: number
}

/** The system's resolvers or DNS_SERVERS, behind a cache of DNS_CACHE_SECONDS (0: none). */
export function defaultResolver(config: Config): Resolver {
  const system = systemResolver(config.DNS_SERVERS?.split(',') ?? [])
  return config.DNS_CACHE_SECONDS ? cachingResolver(system, config.DNS_CACHE_SECONDS * 1000) : system
}

export function createContext(config: Config, sql: Sql, keys: ServerKeys, opts: { plugins: Plugins; resolver?: Resolver }): AppContext {
  return { config, sql, keys, resolver: opts.resolver ?? defaultResolver(config), plugins: opts.plugins, startedAt: Date.now() }
}

/**
 * A feature's per-process state: `make` runs on first use for each context, and every later
 * call with that context returns the same value. A process has one context; tests build
 * several in one process (each app instance with its own configuration), and each gets its own
 * state. Declare it at module level, next to the code that uses it:
 *
 *   const commits = perProcess(ctx => new GroupCommit(batch => storeBatch(ctx, batch)))
 *   commits(ctx).submit(item)
 */
export function perProcess<T>(make: (ctx: AppContext) => T): (ctx: AppContext) => T {
  const made = new WeakMap<AppContext, T>()
  return ctx => {
    if (!made.has(ctx)) made.set(ctx, make(ctx))
    return made.get(ctx)!
  }
}
