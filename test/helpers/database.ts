/**
 * The test database: a fresh database per run on TEST_DATABASE_URL (default: the machine's
 * PostgreSQL), or embedded PGlite when no server answers, so `make test` passes anywhere. It is
 * made when a test first asks for it, once per run (the test files of a run share one global).
 */
import postgres from 'postgres'
import { connectUrl, type Sql } from '../../src/db/client'
import { startEmbeddedPostgres } from '../../src/db/embedded'
import { migrate } from '../../src/db/migrate'

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

export interface TestDatabase {
  url: string
  sql: Sql
  kind: 'postgres' | 'pglite'
  drop(): Promise<void>
}

async function reachable(url: string): Promise<boolean> {
  const probe = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} })
  try {
    await probe`select 1`
    return true
  } catch {
    return false
  } finally {
    await probe.end({ timeout: 1 })
  }
}

declare global {
  var testDatabasePromise: Promise<TestDatabase> | undefined
}

/** The run's database, made on first use. */
export function testDatabase(): Promise<TestDatabase> {
  // `make test-unit` runs the *.unit.test.ts files with TEST_DATABASE=none: one that asks for the
  // database is misnamed, and fails instead of quietly starting one
  if (process.env.TEST_DATABASE === 'none')
    return Promise.reject(new Error('TEST_DATABASE=none: this test needs the database, so it is not a unit test (*.unit.test.ts)'))
  return (globalThis.testDatabasePromise ??= createTestDatabase())
}

/** Drops the run's database, if a test made one. */
export async function dropTestDatabase(): Promise<void> {
  const made = globalThis.testDatabasePromise
  globalThis.testDatabasePromise = undefined
  await (await made)?.drop()
}

async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL || DEFAULT_URL
  if (await reachable(serverUrl)) {
    const name = `agent_mail_test_${process.pid}_${Date.now().toString(36)}`
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database ${name}`)
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    const sql = connectUrl(url.toString(), 10)
    await migrate(sql)
    return {
      url: url.toString(),
      sql,
      kind: 'postgres',
      async drop() {
        await sql.end({ timeout: 5 })
        await admin.unsafe(`drop database if exists ${name} with (force)`)
        await admin.end({ timeout: 5 })
      },
    }
  }
  const dir = `${process.env.TMPDIR ?? '/tmp'}/agent-mail-test-${process.pid}`
  const embedded = await startEmbeddedPostgres(dir, 0)
  const sql = connectUrl(embedded.url, 1)
  await migrate(sql)
  return {
    url: embedded.url,
    sql,
    kind: 'pglite',
    async drop() {
      await sql.end({ timeout: 5 })
      await embedded.stop()
      await Bun.$`rm -rf ${dir}`.quiet()
    },
  }
}
