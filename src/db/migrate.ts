/**
 * Forward-only migrations: `sql/NNNN_name.sql`, applied in order in one transaction under a
 * transaction-scoped advisory lock, so several processes starting at once apply each file once
 * and a failing file leaves the schema as it was.
 *
 * Each applied file is recorded with the SHA-256 of its text. A file changed after it was
 * applied would leave databases that ran the old text and databases that run the new one with
 * different schemas under the same name, so the service refuses to start on one: the change
 * belongs in a new migration. (Rows recorded before checksums existed get the file's current
 * checksum on the first start that knows about them.) The rules for contributors are in
 * docs/architecture.md.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sha256 } from '../crypto'
import type { Sql } from './client'
import { log } from '../log'
import { analyzeFilledTables } from './statistics'

const MIGRATIONS_DIR = join(import.meta.dir, '../../sql')
const LOCK_ID = 727_001 // arbitrary, constant: the advisory lock that serialises migrators
const FILE_NAME = /^\d{4}_[\w-]+\.sql$/

/** The database and the migration files disagree; the message says what to do. */
export class MigrationError extends Error {}

/** A file's checksum: SHA-256 of its text, line endings as LF (a checkout with CRLF is the same file). */
export const checksumOf = (text: string) => sha256(text.replaceAll('\r\n', '\n')).toString('hex')

export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = readdirSync(dir)
    .filter(f => FILE_NAME.test(f))
    .sort()
  const texts = new Map(files.map(f => [f, readFileSync(join(dir, f), 'utf8')]))
  const applied = await sql.begin(async tx => {
    await tx`select pg_advisory_xact_lock(${LOCK_ID})`
    await tx`create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())`
    // added after the first release: rows of older versions have none until the backfill below
    await tx`alter table schema_migrations add column if not exists checksum text`
    const rows = await tx<{ name: string; checksum: string | null }[]>`select name, checksum from schema_migrations order by name`
    for (const row of rows) {
      const text = texts.get(row.name)
      if (text === undefined) {
        log.warn('applied migration has no file', { name: row.name })
        continue
      }
      const checksum = checksumOf(text)
      if (row.checksum === null) await tx`update schema_migrations set checksum = ${checksum} where name = ${row.name}`
      else if (row.checksum !== checksum) {
        throw new MigrationError(
          `migration ${row.name} was changed after it was applied to this database (recorded sha256 ${row.checksum}, the file now ${checksum}). ` +
            'An applied migration must never change: restore the file as it was, and make the change in a new migration.',
        )
      }
    }
    const done = new Set(rows.map(r => r.name))
    const pending = files.filter(f => !done.has(f))
    for (const file of pending) {
      const text = texts.get(file)!
      await tx.unsafe(text)
      await tx`insert into schema_migrations (name, checksum) values (${file}, ${checksumOf(text)})`
    }
    return pending
  })
  for (const name of applied) log.routine('migration applied', { name })
  if (applied.length) log.info('migrations applied', { count: applied.length, last: applied.at(-1) })
  // new indexes and columns get their statistics now, not at the first autovacuum (if any)
  if (applied.length) await analyzeFilledTables(sql)
  return applied
}
