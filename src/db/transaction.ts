/** Transactions that compose: a creation that runs alone, or as one step of a caller's transaction. */
import type postgres from 'postgres'
import type { Sql, Tx } from './client'

/**
 * Runs `fn` in a transaction: a new one, or, when `sql` is already a transaction (a caller
 * composing several creations into one, as a catalog install does), a savepoint of it. Either
 * way the work commits with the outermost transaction or not at all; a failure inside a
 * savepoint rolls back to it, so the caller may still read (to name a conflict) before it fails.
 */
export function transaction<T>(sql: Tx, fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  if ('savepoint' in sql) return (sql as postgres.TransactionSql).savepoint(fn) as Promise<T>
  return (sql as Sql).begin(fn) as Promise<T>
}
