/**
 * More than one process against one PostgreSQL: two processes with every role, and the roles
 * split over three processes (api, smtp, worker). The same SMTP load, spread over every SMTP
 * listener, ends with every message stored once and every webhook delivered once (by event id
 * at the receiver), and a long-poll in one process is answered by mail another stored. (The
 * API limit shared by processes: test/http/rate-limits.abuse.test.ts.)
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createOrg, testApp, testSql } from './helpers/app'
import { testDatabase } from './helpers/database'
import { startDnsStub } from './helpers/dns-stub'
import { managedAddress } from './helpers/mail'
import { spawnService, type ServiceProcess } from './helpers/service-process'
import { RawClient } from './helpers/smtp-client'
import { until } from './helpers/until'

const db = await testDatabase()
const onServer = db.kind === 'postgres'
const cleanup: (() => unknown)[] = []
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn()
})

const dns = onServer ? await startDnsStub() : undefined
cleanup.push(() => dns?.server.kill())
const ENV = { SMTP_HOSTNAME: 'mx.test.local', DNS_SERVERS: `127.0.0.1:${dns?.port}`, WEBHOOK_ALLOW_LOOPBACK: 'true' }

/** A webhook receiver counting the deliveries of each event id. */
function receiver() {
  const seen = new Map<string, number>()
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req) {
      const id = req.headers.get('webhook-id')!
      seen.set(id, (seen.get(id) ?? 0) + 1)
      return new Response('ok')
    },
  })
  cleanup.push(() => server.stop(true))
  return { seen, url: `http://127.0.0.1:${server.port}/hook` }
}

async function service(env: Record<string, string>): Promise<ServiceProcess> {
  const s = await spawnService({ ...ENV, ...env })
  cleanup.push(() => s.proc.kill(9))
  return s
}

/** `count` messages over `ports` in turn, 10 sessions at once, each message on a session of its own. */
async function load(ports: number[], to: string, prefix: string, count: number) {
  let next = 0
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      for (let i = next++; i < count; i = next++) {
        const c = await RawClient.connect(ports[i % ports.length]!)
        await c.read()
        c.write(`EHLO client.sender.example\r\nMAIL FROM:<sam@sender.example>\r\nRCPT TO:<${to}>\r\nDATA\r\n`)
        expect((await c.readMany(4)).map(r => r.slice(0, 3))).toEqual(['250', '250', '250', '354'])
        expect(await c.command(`Subject: ${prefix}-${i}\r\n\r\nx\r\n.`)).toStartWith('250')
        c.end()
      }
    }),
  )
}

async function checkExactlyOnce(layout: ServiceProcess[], smtpPorts: number[], apiPort: number) {
  const hook = receiver()
  const sql = await testSql()
  const { ctx } = await testApp(ENV)
  const org = await createOrg()
  await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${randomUUIDv7()}, ${org.orgId}, 'http', ${hook.url}, true, '{}')`
  const address = await managedAddress(ctx, org.orgId)
  // a long-poll in the api process, answered by mail an smtp listener of another process stores
  const since = new Date().toISOString()
  const poll = fetch(`http://127.0.0.1:${apiPort}/v1/emails?wait=30&since=${encodeURIComponent(since)}`, { headers: { authorization: `Bearer ${org.key}` } })
  await Bun.sleep(200)
  const COUNT = 60
  await load(smtpPorts, address, 'm', COUNT)
  const polled = (await (await poll).json()) as { data: { subject: string }[] }
  expect(polled.data.length).toBeGreaterThan(0)

  const stored = await sql<{ id: string; subject: string }[]>`select id, subject from emails where org_id = ${org.orgId}`
  expect(stored.map(e => e.subject).sort()).toEqual(Array.from({ length: COUNT }, (_, i) => `m-${i}`).sort())
  const deliveries = await until(
    () => sql<{ email_id: string; status: string; event_id: string }[]>`select email_id, status, event_id from webhook_deliveries where org_id = ${org.orgId}`,
    rows => rows.length === COUNT && rows.every(r => r.status === 'delivered'),
  )
  expect(deliveries.filter(d => d.status === 'delivered')).toHaveLength(COUNT)
  expect(new Set(deliveries.map(d => d.email_id))).toEqual(new Set(stored.map(e => e.id)))
  // each event arrived once, however many workers there are
  await until(
    async () => hook.seen.size,
    n => n === COUNT,
  )
  expect([...hook.seen.values()].filter(n => n !== 1)).toEqual([])
  expect(new Set(hook.seen.keys())).toEqual(new Set(deliveries.map(d => d.event_id)))
  expect(layout.every(s => s.proc.exitCode === null)).toBe(true)
}

describe.skipIf(!onServer)('several processes on one PostgreSQL', () => {
  test('two processes with every role: every message stored once, every webhook delivered once', async () => {
    const [a, b] = await Promise.all([service({}), service({})])
    await checkExactlyOnce([a, b], [a.smtpPort!, b.smtpPort!], a.apiPort!)
  }, 60_000)

  test('api, smtp and worker in processes of their own: the same', async () => {
    const [api, smtp, worker] = await Promise.all([service({ ROLES: 'api' }), service({ ROLES: 'smtp' }), service({ ROLES: 'worker' })])
    await checkExactlyOnce([api, smtp, worker], [smtp.smtpPort!], api.apiPort!)
  }, 60_000)
})
