/**
 * `make dev` as a newcomer meets it, each as a real process: a second copy, a bad setting, the
 * banner, and where it listens.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'node:net'
import postgres from 'postgres'
import { explainStartupFailure } from '../src/startup-failure'
import { startService } from '../src/index'
import { TEST_SECRET } from './helpers/app'
import { testDatabase } from './helpers/database'
import { freePort, runDevToExit, startDev, type DevProcess } from './helpers/dev-process'

const db = await testDatabase()

/** Does a TCP connection to host:port succeed? */
function reachable(host: string, port: number): Promise<boolean> {
  return new Promise(resolve => {
    const socket = connect({ host, port })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at |EADDRINUSE|error:/i)

describe('make dev', () => {
  let dev: DevProcess
  const ports = { PORT: String(freePort()), SMTP_PORT: String(freePort()) }
  beforeAll(async () => {
    dev = await startDev(ports)
  }, 90_000) // the embedded database's cold start takes seconds, more on a busy machine
  afterAll(async () => {
    await dev?.stop()
  })

  test('a second copy names the ports and the data directory in use, and the command it suggests starts', async () => {
    const second = await runDevToExit({ ...ports, DATA_DIR: dev.dataDir })
    expect(second.code).toBe(1)
    noStack(second.stderr)
    expect(second.stderr).toContain(`PORT ${ports.PORT} is already in use on 127.0.0.1`)
    expect(second.stderr).toContain(`SMTP_PORT ${ports.SMTP_PORT} is already in use on 127.0.0.1`)
    expect(second.stderr).toContain(`the embedded database under ${dev.dataDir}/pglite is in use by process ${dev.proc.pid}`)
    const suggestion = /^ {2}(PORT=(\d+) SMTP_PORT=(\d+) DATA_DIR=(\S+)) make dev$/m.exec(second.stderr)
    expect(suggestion).not.toBeNull()
    const [, , port, smtpPort, dataDir] = suggestion!
    // the suggested command, as suggested (relative to the same directory)
    const third = await startDev({ PORT: port, SMTP_PORT: smtpPort, DATA_DIR: dataDir }, mkdtempSync(join(tmpdir(), 'dev-third-')))
    try {
      expect(third.apiPort).toBe(Number(port))
      expect(third.smtpPort).toBe(Number(smtpPort))
      expect((await fetch(`http://127.0.0.1:${port}/v1/health`)).status).toBe(200)
    } finally {
      await third.stop()
      rmSync(dataDir!, { recursive: true, force: true })
    }
  }, 120_000)

  test('the banner says where the database is, which plan the organization has, and that it listens on loopback only', async () => {
    expect(dev.output()).toContain(`Database     embedded (PGlite) under ${dev.dataDir}/pglite`)
    expect(dev.output()).toContain('Listening    127.0.0.1 (this machine only; HOST changes it)')
    expect(dev.output()).toMatch(/Development organization \S+ \(developer plan\)/)
    expect(dev.output()).toContain(`More keys:   bin/admin key create ${dev.orgId}`)
    // the links it hands out name the port it was given
    const discovery = (await (await fetch(`http://127.0.0.1:${dev.apiPort}/v1`)).json()) as { data: { api_base_url: string } }
    expect(discovery.data.api_base_url).toBe(`http://localhost:${ports.PORT}/v1`)
    expect(await reachable('127.0.0.1', dev.apiPort)).toBe(true)
    expect(await reachable('127.0.0.1', dev.smtpPort)).toBe(true)
    // any address of this machine other than loopback is refused
    const outside = Object.values(networkInterfaces())
      .flat()
      .find(a => a && a.family === 'IPv4' && !a.internal)
    if (outside) {
      expect(await reachable(outside.address, dev.apiPort)).toBe(false)
      expect(await reachable(outside.address, dev.smtpPort)).toBe(false)
    }
  })

  test('a bad setting prints only the bad keys, their values and what is allowed, and no secret', async () => {
    const bad = await runDevToExit({ PORT: 'eighty', ROLES: 'api,mailer', SECRET_KEY: 'hunter2-is-too-short', DATA_DIR: `${dev.dir}/unused` })
    expect(bad.code).toBe(2)
    noStack(bad.stderr)
    expect(bad.stdout).toBe('')
    expect(bad.stderr).not.toContain('hunter2')
    const keys = [...bad.stderr.matchAll(/^ {2}(\w+): got /gm)].map(m => m[1])
    expect(keys.sort()).toEqual(['PORT', 'ROLES', 'SECRET_KEY'])
    expect(bad.stderr).toContain('PORT: got "eighty"; allowed: an integer from 0 to 65535')
    expect(bad.stderr).toContain('ROLES: got "api,mailer"; allowed:')
    expect(bad.stderr).toContain('api, smtp, worker')
    expect(bad.stderr).toContain('SECRET_KEY: got a value of 20 characters (hidden); allowed: text at least 32 characters')
  }, 30_000)
})

describe.skipIf(db.kind !== 'postgres')('make dev on DATABASE_URL', () => {
  test('the banner names the PostgreSQL server and the plan the database holds now', async () => {
    const first = await startDev({ DATABASE_URL: db.url })
    const url = new URL(db.url)
    try {
      expect(first.output()).toContain(`Database     PostgreSQL at ${url.host}${url.pathname} (DATABASE_URL)`)
      expect(first.output()).not.toContain('embedded')
      const sql = postgres(db.url, { max: 1, onnotice: () => {} })
      await sql`update orgs set plan = 'power' where id = ${first.orgId}`
      await sql.end()
    } finally {
      await first.stop({ keep: true })
    }
    const second = await startDev({ DATABASE_URL: db.url }, first.dir)
    try {
      expect(second.orgId).toBe(first.orgId)
      expect(second.output()).toMatch(/Development organization \S+ \(power plan\)/)
    } finally {
      await second.stop()
    }
  }, 120_000)

  test('a port taken while the service starts is named with the setting that chooses another', async () => {
    const taken = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const env = {
      DATABASE_URL: db.url,
      PORT: String(taken.port),
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      ROLES: 'api',
      SECRET_KEY: TEST_SECRET,
      LOG_LEVEL: 'silent',
    }
    try {
      const error = await startService(env).then(
        () => undefined,
        e => e,
      )
      expect(error?.code).toBe('EADDRINUSE')
      const message = explainStartupFailure(error, env, 'make dev')!
      expect(message).toContain(`PORT ${taken.port} is already in use on 127.0.0.1`)
      expect(message).toMatch(/^ {2}PORT=\d+ make dev$/m)
    } finally {
      taken.stop(true)
    }
  })
})
