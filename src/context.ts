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
import type { Replica } from './db/replica'
import { cachingResolver, systemResolver, type Resolver } from './dns/resolver'

/**
 * What features plug into the seams the core offers. The context declares it empty: each core
 * module that offers a seam adds its field, typed, where it calls it (`declare module
 * '../context'`, as http/auth.ts does for the credential resolver), so the ground floor names
 * nothing above it. The composition root (src/plugins.ts) fills every field once.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by the seams' own modules (declaration merging)
export interface Plugins {}

export interface AppContext {
  readonly config: Config
  readonly sql: Sql
  readonly keys: ServerKeys
  /** every DNS lookup of the service goes through this */
  readonly resolver: Resolver
  readonly plugins: Plugins
  readonly startedAt: number
  /** the streaming replica reads may use (DATABASE_REPLICA_URL); http/read-routing.ts decides which reads do */
  readonly replica?: Replica
  /** set on a context that reads through the replica (`readingThrough`): the context it was made from, whose per-process state it shares */
  readonly origin?: AppContext
}

/** The system's resolvers or DNS_SERVERS, behind a cache of DNS_CACHE_SECONDS (0: none). */
export function defaultResolver(config: Config): Resolver {
  const system = systemResolver(config.DNS_SERVERS?.split(',') ?? [])
  return config.DNS_CACHE_SECONDS ? cachingResolver(system, config.DNS_CACHE_SECONDS * 1000) : system
}

export function createContext(config: Config, sql: Sql, keys: ServerKeys, opts: { plugins: Plugins; resolver?: Resolver; replica?: Replica }): AppContext {
  return { config, sql, keys, resolver: opts.resolver ?? defaultResolver(config), plugins: opts.plugins, replica: opts.replica, startedAt: Date.now() }
}

const readers = new WeakMap<AppContext, AppContext>()

/** The same context with `sql` on the replica: one per context, sharing its per-process state (`perProcess` keys on the origin). */
export function readingThrough(ctx: AppContext, replica: Replica): AppContext {
  const origin = ctx.origin ?? ctx
  let reader = readers.get(origin)
  if (!reader) readers.set(origin, (reader = { ...origin, sql: replica.sql, origin }))
  return reader
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
  return context => {
    const ctx = context.origin ?? context
    if (!made.has(ctx)) made.set(ctx, make(ctx))
    return made.get(ctx)!
  }
}
