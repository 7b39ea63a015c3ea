/**
 * The service as a process runs it (startService): migrations under their lock, the roles ROLES
 * names, and a graceful shutdown that lets in-flight requests finish.
 */
import { describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { migrate } from '../src/db/migrate'
import { connectUrl } from '../src/db/client'
import { startService } from '../src/index'
import { ConfigError } from '../src/config'
import { createOrg, TEST_SECRET } from './helpers/app'
import { mailEvents } from '../src/events'
import { testDatabase } from './helpers/database'
import { freePort } from './helpers/dev-process'
import { tcpProxy } from './helpers/tcp-proxy'

const db = await testDatabase()
// The embedded fallback serves one connection: a second service cannot share it.
const onServer = db.kind === 'postgres'

async function scratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `agent_mail_scratch_${process.pid}_${Date.now().toString(36)}`
  const admin = postgres(db.url, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = Object.assign(new URL(db.url), { pathname: `/${name}` }).toString()
  return {
    url,
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    },
  }
}

describe.skipIf(!onServer)('startup and shutdown', () => {
  test('migrations started at once by several processes apply each file exactly once', async () => {
    const scratch = await scratchDatabase()
    const clients = [connectUrl(scratch.url, 2), connectUrl(scratch.url, 2), connectUrl(scratch.url, 2)]
    try {
      const applied = await Promise.all(clients.map(sql => migrate(sql)))
      const files = applied.flat()
      expect(files.length).toBeGreaterThan(5)
      expect(new Set(files).size).toBe(files.length)
      expect(applied.filter(a => a.length > 0)).toHaveLength(1)
      expect(await migrate(clients[0]!)).toEqual([])
    } finally {
      await Promise.all(clients.map(sql => sql.end()))
      await scratch.drop()
    }
  })

  test('the upgrade to single-stage inbound refuses to drop a queue that still holds accepted mail, and drops an empty one', async () => {
    const scratch = await scratchDatabase()
    const sql = connectUrl(scratch.url, 2)
    // the migrations of the two-stage version, then a message it accepted and had not processed
    const before = mkdtempSync(join(tmpdir(), 'migrations-'))
    const all = join(import.meta.dir, '../sql')
    try {
      for (const file of readdirSync(all).filter(f => f < '0012')) copyFileSync(join(all, file), join(before, file))
      await migrate(sql, before)
      await sql`insert into inbound_queue (id, raw, mail_from, rcpt_to, remote_ip, tls) values (${crypto.randomUUID()}, ${new Uint8Array([1])}, '', '{}', '127.0.0.1', false)`
      await expect(migrate(sql)).rejects.toThrow(/inbound_queue still holds 1 accepted messages/)
      expect(await sql`select 1 from inbound_queue`).toHaveLength(1)
      await sql`delete from inbound_queue`
      expect(await migrate(sql)).toContain('0012_single_stage_ingest.sql')
      expect((await sql<{ t: string | null }[]>`select to_regclass('inbound_queue')::text as t`)[0]!.t).toBeNull()
    } finally {
      rmSync(before, { recursive: true, force: true })
      await sql.end()
      await scratch.drop()
    }
  })

  test('ROLES=api serves HTTP and no SMTP; SIGTERM-style shutdown lets a request in flight finish', async () => {
    const service = await startService({
      DATABASE_URL: db.url,
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      ROLES: 'api',
      SECRET_KEY: TEST_SECRET,
      LOG_LEVEL: 'silent',
    })
    expect(service.running.smtpPort).toBeUndefined()
    expect(service.running.worker).toBeUndefined()
    const org = await createOrg()
    const base = `http://127.0.0.1:${service.running.apiPort}`
    expect((await fetch(`${base}/v1/health`)).status).toBe(200)
    // a long-poll that is still waiting when the shutdown begins
    const events = mailEvents(service.ctx)
    const inFlight = fetch(`${base}/v1/emails?wait=1`, { headers: { authorization: `Bearer ${org.key}` } })
    while (events.waiting === 0) await Bun.sleep(1)
    const stopping = service.shutdown('SIGTERM')
    const res = await inFlight
    expect(res.status).toBe(200)
    expect(((await res.json()) as { success: boolean }).success).toBe(true)
    await stopping
    expect(await fetch(`${base}/v1/health`).catch(() => 'refused')).toBe('refused')
  })

  test('ROLES=worker and ROLES=smtp answer GET /v1/health on PORT (the image HEALTHCHECK asks there), and nothing else; the extra smtp processes leave PORT alone', async () => {
    const port = freePort()
    for (const ROLES of ['worker', 'smtp']) {
      const service = await startService({
        DATABASE_URL: db.url,
        PORT: String(port),
        SMTP_PORT: '0',
        HOST: '127.0.0.1',
        ROLES,
        SMTP_PROCESSES: '2',
        SECRET_KEY: TEST_SECRET,
        LOG_LEVEL: 'silent',
      })
      const base = `http://127.0.0.1:${port}`
      try {
        expect(service.running.apiPort).toBeUndefined()
        expect(service.running.healthPort).toBe(port)
        // the extra smtp process started (it would not, had it tried to listen on PORT too)
        if (ROLES === 'smtp') expect(service.smtpProcesses?.pids()).toHaveLength(1)
        const res = await fetch(`${base}/v1/health`)
        expect(res.status).toBe(200)
        expect(await res.json()).toMatchObject({ success: true, data: { status: 'ok', dependencies: { database: { status: 'up' } } } })
        const other = await fetch(`${base}/v1/whoami`)
        expect(other.status).toBe(404)
        expect(await other.json()).toMatchObject({ success: false, error: { code: 'not_found' } })
      } finally {
        await service.shutdown('SIGTERM')
      }
      expect(await fetch(`${base}/v1/health`).catch(() => 'refused')).toBe('refused')
    }
  })

  test('the health listener of a process without the api role says 503 database_unavailable while the database does not answer', async () => {
    const target = new URL(db.url)
    const proxy = tcpProxy({ hostname: target.hostname, port: Number(target.port || 5432) })
    proxy.open()
    const through = Object.assign(new URL(db.url), { hostname: '127.0.0.1', port: String(proxy.port) }).toString()
    const service = await startService({ DATABASE_URL: through, PORT: '0', HOST: '127.0.0.1', ROLES: 'worker', SECRET_KEY: TEST_SECRET, LOG_LEVEL: 'silent' })
    try {
      proxy.cut()
      const res = await fetch(`http://127.0.0.1:${service.running.healthPort}/v1/health`)
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(await res.json()).toMatchObject({
        success: false,
        error: { code: 'database_unavailable', details: { status: 'unavailable', dependencies: { database: { status: 'down' } } } },
      })
      proxy.open()
      expect((await fetch(`http://127.0.0.1:${service.running.healthPort}/v1/health`)).status).toBe(200)
    } finally {
      await service.shutdown('SIGTERM')
      proxy.cut()
    }
  })

  test('all roles: the SMTP listener answers and the worker runs', async () => {
    const service = await startService({ DATABASE_URL: db.url, PORT: '0', SMTP_PORT: '0', HOST: '127.0.0.1', SECRET_KEY: TEST_SECRET, LOG_LEVEL: 'silent' })
    try {
      expect(service.running.worker).toBeDefined()
      const banner = await new Promise<string>((resolve, reject) => {
        Bun.connect({
          hostname: '127.0.0.1',
          port: service.running.smtpPort!,
          socket: {
            data(socket, data) {
              resolve(Buffer.from(data).toString())
              socket.end()
            },
            error: (_s, e) => reject(e),
          },
        }).catch(reject)
      })
      expect(banner).toStartWith('220 ')
    } finally {
      await service.shutdown('SIGTERM')
    }
  })
})

test('a bad configuration names every bad key and starts nothing', async () => {
  await expect(startService({ PORT: 'eighty', ROLES: 'api,mailman' })).rejects.toThrow(ConfigError)
  await expect(startService({ PORT: 'eighty', ROLES: 'api,mailman' })).rejects.toThrow(/PORT[\s\S]*ROLES|ROLES[\s\S]*PORT/)
})

test.skipIf(!onServer)('production without SECRET_KEY is refused before any migration runs', async () => {
  const scratch = await scratchDatabase()
  try {
    await expect(startService({ NODE_ENV: 'production', DATABASE_URL: scratch.url, PORT: '0', SMTP_PORT: '0' })).rejects.toThrow(/SECRET_KEY: got nothing/)
    const sql = postgres(scratch.url, { max: 1, onnotice: () => {} })
    const [row] = await sql<{ exists: boolean }[]>`select to_regclass('schema_migrations') is not null as exists`
    await sql.end()
    expect(row!.exists).toBe(false)
  } finally {
    await scratch.drop()
  }
})
