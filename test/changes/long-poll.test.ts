/**
 * The feed over real sockets: a long-poll woken by a message delivered over SMTP, many woken
 * together, and a feed resumed after the service restarts, with nothing missed or repeated.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import nodemailer from 'nodemailer'
import { Resolver } from 'node:dns/promises'
import { createOrg, TEST_SECRET, type TestOrg } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startService, type Service } from '../../src/index'
import { mailEvents } from '../../src/events'

const db = await testDatabase()

let h: InboundHarness
let org: TestOrg
let address: string

beforeAll(async () => {
  h = await inboundHarness()
  org = await createOrg()
  address = await managedAddress(h.ctx, org.orgId)
})
afterAll(() => h.stop())

/**
 * A wait that ends at its deadline still reads once more, and would hold the change: so the
 * tests of wake-ups wait longer (30 s) than they may take (this timeout), and a poll that was
 * not woken fails them.
 */
const WOKEN_WITHIN = 15_000

describe('long-poll', () => {
  test(
    'GET /v1/changes?wait= is woken by a message delivered over SMTP',
    async () => {
      const start = expectOk(await h.request('GET', '/v1/changes/cursor', { key: org.key })).cursor
      // the poll would wait 30 s, past this test's 15 s: it answers in time only if the delivery woke it
      const polling = h.request('GET', `/v1/changes?cursor=${start}&wait=30`, { key: org.key })
      await Bun.sleep(50)
      await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'wake up', text: 'hello' })
      const res = await polling
      const changes = expectOk(res)
      expect(changes.map((c: { type: string; data: { subject: string } }) => [c.type, c.data.subject])).toEqual([['email.received', 'wake up']])
    },
    WOKEN_WITHIN,
  )

  test('twenty long-polls at one cursor, woken together, each get every change once, in order', async () => {
    const start = expectOk(await h.request('GET', '/v1/changes/cursor', { key: org.key })).cursor as string
    const subjects = ['one', 'two', 'three', 'four', 'five']
    const consumer = async () => {
      const seen: string[] = []
      let cursor = start
      while (seen.length < subjects.length) {
        const res = await h.request('GET', `/v1/changes?cursor=${cursor}&wait=20&types=email.received`, { key: org.key })
        const page = expectOk(res) as { data: { subject: string } }[]
        if (!page.length) break
        seen.push(...page.map(c => c.data.subject))
        cursor = res.body.meta.cursor
      }
      return seen
    }
    const consumers = Array.from({ length: 20 }, consumer)
    await Bun.sleep(50)
    for (const subject of subjects) await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject, text: 'x' })
    for (const seen of await Promise.all(consumers)) expect(seen).toEqual(subjects)
  })

  test(
    'without LISTEN (as on the embedded database), a change whose writer signals no one still ends the wait',
    async () => {
      // this harness does not LISTEN, and a deployment sends only its NOTIFY: the wait reads again
      expect(mailEvents(h.ctx).listening).toBe(false)
      const start = expectOk(await h.request('GET', '/v1/changes/cursor', { key: org.key })).cursor
      // as above: 30 s of wait against the test's 15 s
      const polling = h.request('GET', `/v1/changes?cursor=${start}&wait=30&types=function.*`, { key: org.key })
      await Bun.sleep(50)
      const fn = expectOk(
        await h.request('POST', '/v1/functions', {
          key: org.key,
          body: { name: 'silent-writer', code: 'export default { fetch() { return new Response("") } }' },
        }),
        201,
      )
      const changes = expectOk(await polling)
      expect(changes.map((c: { type: string; data: { function_id: string } }) => [c.type, c.data.function_id])).toEqual([['function.deployed', fn.id]])
    },
    WOKEN_WITHIN,
  )

  test(
    'a change the filters skip does not end the wait; a matching one does',
    async () => {
      const start = expectOk(await h.request('GET', '/v1/changes/cursor', { key: org.key })).cursor
      const polling = h.request('GET', `/v1/changes?cursor=${start}&wait=30&types=email.received`, { key: org.key })
      await Bun.sleep(50)
      expectOk(await h.request('PUT', '/v1/memories/skipped', { key: org.key, body: { value: 1 } }))
      await Bun.sleep(50)
      await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'matching', text: 'hello' })
      const changes = expectOk(await polling)
      expect(changes.map((c: { data: { subject: string } }) => c.data.subject)).toEqual(['matching'])
    },
    WOKEN_WITHIN,
  )
})

const onServer = db.kind === 'postgres'

describe.skipIf(!onServer)('restart', () => {
  // A loopback DNS server that knows no names: authentication lookups answer NXDOMAIN at once.
  const dnsPort = 20000 + Math.floor(Math.random() * 20000)
  let dns: ReturnType<typeof Bun.spawn> | undefined
  beforeAll(async () => {
    dns = Bun.spawn(['bun', `${import.meta.dir}/../bench/dns-stub.ts`, String(dnsPort)], {
      env: { ...process.env, BENCH_DNS: '{}' },
      stdout: 'ignore',
      stderr: 'ignore',
    })
    // ready when it answers (NXDOMAIN) instead of timing out
    const probe = new Resolver({ timeout: 200, tries: 1 })
    probe.setServers([`127.0.0.1:${dnsPort}`])
    for (;;) {
      const code = await probe.resolveTxt('probe.test').then(
        () => 'ok',
        (e: { code: string }) => e.code,
      )
      if (code !== 'ETIMEOUT' && code !== 'ECONNREFUSED') break
    }
  })
  afterAll(() => dns?.kill())
  const env = {
    DATABASE_URL: db.url,
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    SECRET_KEY: TEST_SECRET,
    LOG_LEVEL: 'silent',
    MANAGED_DOMAIN: 'agents.test.local',
    SMTP_HOSTNAME: 'mx.test.local',
    ROLES: 'api,smtp',
    DNS_SERVERS: `127.0.0.1:${dnsPort}`,
  }

  async function mailTo(service: Service, subject: string) {
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port: service.running.smtpPort!, secure: false, ignoreTLS: true })
    await transport.sendMail({ from: 'sam@sender.example', to: address, subject, text: 'x' })
    transport.close()
  }

  async function read(service: Service, cursor: string) {
    const res = await fetch(`http://127.0.0.1:${service.running.apiPort}/v1/changes?cursor=${cursor}&limit=2`, {
      headers: { authorization: `Bearer ${org.key}` },
    })
    const body = (await res.json()) as { data: { id: string; data: { subject: string } }[]; meta: { cursor: string } }
    return { subjects: body.data.map(c => c.data.subject), ids: body.data.map(c => c.id), cursor: body.meta.cursor }
  }

  test('a feed resumed after a restart of the service misses and repeats nothing', async () => {
    let service = await startService(env)
    let cursor = expectOk(await h.request('GET', '/v1/changes/cursor', { key: org.key })).cursor as string
    const seen: string[] = []
    const ids: string[] = []
    try {
      for (const s of ['one', 'two', 'three']) await mailTo(service, s)
      const page = await read(service, cursor)
      seen.push(...page.subjects)
      ids.push(...page.ids)
      cursor = page.cursor
    } finally {
      await service.shutdown('SIGTERM')
    }
    // while it is down, mail arrives through another process (the test harness's listener)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'four', text: 'x' })
    service = await startService(env)
    try {
      await mailTo(service, 'five')
      for (;;) {
        const page = await read(service, cursor)
        if (!page.subjects.length) break
        seen.push(...page.subjects)
        ids.push(...page.ids)
        cursor = page.cursor
      }
    } finally {
      await service.shutdown('SIGTERM')
    }
    expect(seen).toEqual(['one', 'two', 'three', 'four', 'five'])
    expect(new Set(ids).size).toBe(5)
  })
})
