/**
 * The database connections of settlements in flight. A claimer holds one from its claim to its
 * record, across the chain step, since the settlement's lock is a session lock on it
 * (settle.service.ts); a settler holds one for its attempt's transaction. On a real chain that
 * step lasts seconds (a transaction waits for its block, an HTTP facilitator for its /settle),
 * so settlements in flight would take every connection of the process's pool, and with them
 * every other request's queries. They come from a pool of their own instead
 * (X402_SETTLEMENT_CONNECTIONS): more settlements wait for one of its connections, nothing else
 * does. A process whose pool is one connection (the embedded database serves no other) settles
 * on it.
 */
import postgres from 'postgres'
import type { AppContext } from '../context'
import type { Sql } from '../db/client'

/** idle connections of the pool close after this many seconds */
const IDLE_SECONDS = 30

// per pool of the process (tests share one among their apps)
const pools = new WeakMap<Sql, Sql>()

/** The pool settlements take their connections from. */
export function settlementSql(ctx: AppContext): Sql {
  if (ctx.sql.options.max === 1) return ctx.sql
  let pool = pools.get(ctx.sql)
  if (!pool) {
    // the process pool's parsed settings (types, transforms) with a size of its own
    pool = postgres({ ...ctx.sql.options, max: ctx.config.X402_SETTLEMENT_CONNECTIONS, idle_timeout: IDLE_SECONDS } as unknown as postgres.Options<
      Record<string, never>
    >) as unknown as Sql
    pools.set(ctx.sql, pool)
  }
  return pool
}

/** Closes the pool, once no settlement is in flight (at shutdown, after the roles stopped). */
export async function closeSettlementSql(ctx: AppContext): Promise<void> {
  const pool = pools.get(ctx.sql)
  if (!pool) return
  pools.delete(ctx.sql)
  await pool.end({ timeout: 5 })
}
