/**
 * Forward-only migrations: `sql/NNNN_name.sql`, applied in order in one transaction under a
 * transaction-scoped advisory lock, so several processes starting at once apply each file once
 * and a failing file leaves the schema as it was.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Sql } from './client'
import { log } from '../log'

const MIGRATIONS_DIR = join(import.meta.dir, '../../sql')
const LOCK_ID = 727_001 // arbitrary, constant: the advisory lock that serialises migrators

export async function migrate(sql: Sql, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = readdirSync(dir).filter(f => /^\d{4}_[\w-]+\.sql$/.test(f)).sort()
  const applied = await sql.begin(async tx => {
    await tx`select pg_advisory_xact_lock(${LOCK_ID})`
    await tx`create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())`
    const done = new Set((await tx<{ name: string }[]>`select name from schema_migrations`).map(r => r.name))
    const pending = files.filter(f => !done.has(f))
    for (const file of pending) {
      await tx.unsafe(readFileSync(join(dir, file), 'utf8'))
      await tx`insert into schema_migrations (name) values (${file})`
    }
    return pending
  })
  for (const name of applied) log.info('migration applied', { name })
  return applied
}
