/** Transactions: ones that compose (a creation that runs alone, or as one step of a caller's transaction), and pipelined ones. */
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

/** Sends COMMIT after `statements` (already sent) and resolves with their results; see `pipelinedTransaction`. */
export type Commit = <S extends readonly unknown[]>(...statements: S) => Promise<{ -readonly [K in keyof S]: Awaited<S[K]> }>

/**
 * A transaction in two round trips fewer than `sql.begin` on a reserved connection: BEGIN goes
 * out ahead of the first statements `fn` sends, and `commit(...statements)` sends COMMIT behind
 * the last ones, so both travel with other work. COMMIT follows every statement `fn` has sent
 * by then, those sent from microtasks included (an async function's first statement); a
 * statement that waits for another's answer before it is sent (a read, then a write built from
 * it) must be awaited before `commit`, or it would run after the COMMIT, outside the
 * transaction. When a statement fails the transaction is aborted and its COMMIT rolls back; `fn`
 * returning or throwing without `commit` rolls back. A failed BEGIN fails the connection, and
 * the statements behind it with it. `sql` is the pool, or a connection the caller reserved and
 * releases itself.
 */
export async function pipelinedTransaction<T>(sql: Sql | postgres.ReservedSql, fn: (tx: postgres.ReservedSql, commit: Commit) => Promise<T>): Promise<T> {
  const own = !('release' in sql)
  const tx = own ? await sql.reserve() : sql
  // the COMMIT once sent: the connection goes back to the pool only after it is answered
  let committed: Promise<unknown> | undefined
  const begun = tx.unsafe('begin').execute()
  begun.catch(() => {})
  const commit = (async (...statements: unknown[]) => {
    const all = Promise.all(statements)
    all.catch(() => {})
    // statements sent from microtasks are on the connection before the next macrotask
    await new Promise(resolve => setImmediate(resolve))
    const done = tx`commit`.execute()
    committed = done.catch(() => {})
    const [, results, answer] = await Promise.all([begun, all, done])
    if (answer.command !== 'COMMIT') throw new Error(`transaction: COMMIT answered ${answer.command}`)
    return results
  }) as Commit
  try {
    return await fn(tx, commit)
  } finally {
    // Not before the COMMIT, or the ROLLBACK, is answered: a reserved connection holds the
    // statements it has not sent yet (postgres.js sends one at a time while a statement new to
    // the connection is described), and releasing it drops them. A failed statement makes
    // commit() reject at once, with the COMMIT still unsent: released then, the connection went
    // back to the pool inside the aborted transaction, and every later user of it failed.
    if (committed) await committed
    else await tx`rollback`.catch(() => {})
    if (own) tx.release()
  }
}
