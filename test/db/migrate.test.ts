/**
 * Migration checksums: each applied file is recorded with its SHA-256, a database from before
 * checksums gets them on its first start, and a file changed after it was applied stops the start.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checksumOf, migrate, MigrationError } from '../../src/db/migrate'
import { connectUrl, type Sql } from '../../src/db/client'
import { startService } from '../../src/index'
import { TEST_SECRET } from '../helpers/app'
import { testDatabase } from '../helpers/database'

const db = await testDatabase()
// The embedded fallback serves one connection: a scratch database needs a server.
const onServer = db.kind === 'postgres'

describe.skipIf(!onServer)('migration checksums', () => {
  let admin: postgres.Sql
  const scratch: string[] = []
  const dirs: string[] = []

  beforeAll(() => {
    admin = postgres(db.url, { max: 1, onnotice: () => {} })
  })
  afterAll(async () => {
    for (const name of scratch) await admin.unsafe(`drop database if exists ${name} with (force)`)
    await admin.end()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  /** An empty database of its own, and a directory of migration files. */
  async function fresh(files: Record<string, string>): Promise<{ sql: Sql; url: string; dir: string; write(name: string, text: string): void }> {
    const name = `agent_mail_migrate_${process.pid}_${Date.now().toString(36)}_${scratch.length}`
    await admin.unsafe(`create database ${name}`)
    scratch.push(name)
    const dir = mkdtempSync(join(tmpdir(), 'migrations-'))
    dirs.push(dir)
    const write = (file: string, text: string) => writeFileSync(join(dir, file), text)
    for (const [file, text] of Object.entries(files)) write(file, text)
    const url = Object.assign(new URL(db.url), { pathname: `/${name}` }).toString()
    return { sql: connectUrl(url, 1), url, dir, write }
  }

  const recorded = async (sql: Sql) => [...(await sql<{ name: string; checksum: string | null }[]>`select name, checksum from schema_migrations order by name`)]

  test('each applied file is recorded with the SHA-256 of its text', async () => {
    const m = await fresh({ '0001_a.sql': 'create table a (id int);', '0003_b.sql': 'create table b (id int);' })
    try {
      expect(await migrate(m.sql, m.dir)).toEqual(['0001_a.sql', '0003_b.sql'])
      expect(await recorded(m.sql)).toEqual([
        { name: '0001_a.sql', checksum: checksumOf('create table a (id int);') },
        { name: '0003_b.sql', checksum: checksumOf('create table b (id int);') },
      ])
      expect(checksumOf('x')).toBe(new Bun.CryptoHasher('sha256').update('x').digest('hex'))
      // a checkout with CRLF line endings is the same file
      expect(checksumOf('a\r\nb\r\n')).toBe(checksumOf('a\nb\n'))
      // unchanged files: nothing to do, and a start goes on
      expect(await migrate(m.sql, m.dir)).toEqual([])
    } finally {
      await m.sql.end()
    }
  })

  test('an applied file that changed refuses the start and names the file; nothing is applied', async () => {
    const m = await fresh({ '0001_a.sql': 'create table a (id int);' })
    try {
      await migrate(m.sql, m.dir)
      m.write('0001_a.sql', 'create table a (id int, extra text);')
      m.write('0002_b.sql', 'create table b (id int);')
      const error = await migrate(m.sql, m.dir).catch(e => e)
      expect(error).toBeInstanceOf(MigrationError)
      expect(error.message).toContain('migration 0001_a.sql was changed after it was applied')
      expect(error.message).toContain('make the change in a new migration')
      expect((await m.sql`select to_regclass('b')::text as t`)[0]!.t).toBeNull()
      // restored as it was, the start goes on
      m.write('0001_a.sql', 'create table a (id int);')
      expect(await migrate(m.sql, m.dir)).toEqual(['0002_b.sql'])
    } finally {
      await m.sql.end()
    }
  })

  test('a database from before checksums gets them on its first start, without applying anything again', async () => {
    const m = await fresh({ '0001_a.sql': 'create table a (id int);', '0002_b.sql': 'create table b (id int);' })
    try {
      // what the previous version left: the table without its checksum column, 0001 applied
      await m.sql`create table schema_migrations (name text primary key, applied_at timestamptz not null default now())`
      await m.sql`create table a (id int)`
      await m.sql`insert into schema_migrations (name) values ('0001_a.sql')`
      expect(await migrate(m.sql, m.dir)).toEqual(['0002_b.sql'])
      expect(await recorded(m.sql)).toEqual([
        { name: '0001_a.sql', checksum: checksumOf('create table a (id int);') },
        { name: '0002_b.sql', checksum: checksumOf('create table b (id int);') },
      ])
    } finally {
      await m.sql.end()
    }
  })

  test('the service refuses to start on a changed migration, with the message', async () => {
    const m = await fresh({})
    try {
      await migrate(m.sql)
      await m.sql`update schema_migrations set checksum = ${checksumOf('something else')} where name = (select min(name) from schema_migrations)`
      const error = await startService({
        DATABASE_URL: m.url,
        PORT: '0',
        SMTP_PORT: '0',
        HOST: '127.0.0.1',
        ROLES: 'api',
        SECRET_KEY: TEST_SECRET,
        LOG_LEVEL: 'silent',
      }).catch(e => e)
      expect(error).toBeInstanceOf(MigrationError)
      expect(error.message).toMatch(/^migration 0001_\w+\.sql was changed after it was applied/)
    } finally {
      await m.sql.end()
    }
  })
})

describe('the migration files', () => {
  test('each number is used once, and each name is NNNN_description.sql', () => {
    const files = [...new Bun.Glob('*').scanSync(join(import.meta.dir, '../../sql'))]
    for (const f of files) expect(f).toMatch(/^\d{4}_[a-z0-9_]+\.sql$/)
    const numbers = files.map(f => f.slice(0, 4))
    expect(new Set(numbers).size).toBe(numbers.length)
  })
})
