/**
 * GET /v1/events/stream over real sockets: the api listener (node:http), a real SSE client
 * (`eventsource`) that loses its connection and resumes with Last-Event-ID, mail delivered over
 * SMTP, the per-organization cap, connection keys confined to their address, heartbeats and the
 * end at shutdown.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { EventSource } from 'eventsource'
import { createOrg, TEST_SECRET, testSql, type TestOrg } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { expectError, expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { tcpProxy } from '../helpers/tcp-proxy'
import { until } from '../helpers/until'
import { serveHttp, type HttpServer } from '../../src/http/serve'
import { EventStreams, eventStreams } from '../../src/changes/stream'
import { MailEvents, mailEvents } from '../../src/events'
import { startService } from '../../src/index'

const db = await testDatabase()

const CAP = 3
let h: InboundHarness
let server: HttpServer
let base: string
let org: TestOrg
let address: string

beforeAll(async () => {
  h = await inboundHarness({ EVENT_STREAMS_PER_ORG: String(CAP) })
  // a short request timeout: a stream must outlive it (the listener never cuts one off)
  server = await serveHttp(h.app, { port: 0, hostname: '127.0.0.1', maxBodyBytes: 1 << 20, requestTimeoutMs: 1000 })
  base = `http://127.0.0.1:${server.port}`
  org = await createOrg()
  address = await managedAddress(h.ctx, org.orgId)
})
afterAll(async () => {
  await server.stop(true)
  await h.stop()
})

interface Received {
  id: string
  type: string
  data: { seq: number; type: string; data: { subject?: string } }
}

/** A stream read with fetch: its status, and the events and comments parsed as they arrive. */
async function openStream(path: string, key: string, headers: Record<string, string> = {}) {
  const abort = new AbortController()
  const res = await fetch(base + path, { headers: { authorization: `Bearer ${key}`, ...headers }, signal: abort.signal })
  const events: Received[] = []
  const comments: string[] = []
  let ended = false
  if (res.ok && res.body) {
    void (async () => {
      const decoder = new TextDecoder()
      let buffer = ''
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true })
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const fields = Object.fromEntries(block.split('\n').map(l => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]))
            if ('' in fields) comments.push(fields['']!)
            if (fields.data) events.push({ id: fields.id!, type: fields.event!, data: JSON.parse(fields.data) })
          }
        }
      } catch {
        // aborted by the test
      }
      ended = true
    })()
  }
  return { res, events, comments, close: () => abort.abort(), ended: () => ended }
}

const subjects = (events: Received[]) => events.map(e => e.data.data.subject)
const mail = (to: string, subject: string) => h.transport.sendMail({ from: 'sam@sender.example', to, subject, text: 'x' })

describe('GET /v1/events/stream', () => {
  test('an EventSource gets mail delivered over SMTP, loses its connection, and resumes with Last-Event-ID: every event exactly once', async () => {
    const proxy = tcpProxy({ hostname: '127.0.0.1', port: server.port })
    proxy.open()
    const start = expectOk(await h.request('GET', '/v1/changes/cursor', { key: org.key })).cursor as string
    const received: { id: string; subject: string }[] = []
    let opens = 0
    const source = new EventSource(`http://127.0.0.1:${proxy.port}/v1/events/stream?types=email.received&cursor=${start}`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, authorization: `Bearer ${org.key}` } }),
    })
    source.addEventListener('open', () => opens++)
    source.addEventListener('email.received', e => received.push({ id: e.lastEventId, subject: JSON.parse(e.data).data.subject }))
    try {
      await mail(address, 'one')
      await until(
        async () => received.length,
        n => n >= 1,
      )
      expect(received.map(r => r.subject)).toEqual(['one'])
      // the connection drops, and mail arrives while the client cannot reach the service
      proxy.cut()
      await until(
        async () => eventStreams(h.ctx).size,
        n => n === 0,
      )
      await mail(address, 'two')
      await mail(address, 'three')
      proxy.open()
      await until(
        async () => received.length,
        n => n >= 3,
      )
      // past the listener's 1 s request timeout: nothing cut the resumed stream
      await Bun.sleep(1200)
      await mail(address, 'four')
      await until(
        async () => received.length,
        n => n >= 4,
      )
      expect(received.map(r => r.subject)).toEqual(['one', 'two', 'three', 'four'])
      expect(new Set(received.map(r => r.id)).size).toBe(4)
      expect(opens).toBe(2)
      // an event id is a cursor of the feed: resuming GET /v1/changes from it reads what came after
      const after = expectOk(await h.request('GET', `/v1/changes?types=email.received&cursor=${received[1]!.id}`, { key: org.key }))
      expect(after.map((c: Received['data']) => c.data.subject)).toEqual(['three', 'four'])
    } finally {
      source.close()
      proxy.cut()
    }
  }, 30_000)

  test('the stream answers with text/event-stream through the api listener, unbuffered', async () => {
    const s = await openStream('/v1/events/stream', org.key)
    try {
      expect(s.res.status).toBe(200)
      expect(s.res.headers.get('content-type')).toStartWith('text/event-stream')
      expect(s.res.headers.get('content-length')).toBeNull()
      await mail(address, 'live')
      const events = await until(
        async () => s.events,
        e => e.length > 0,
      )
      expect(events.map(e => [e.type, e.data.data.subject])).toEqual([['email.received', 'live']])
    } finally {
      s.close()
    }
  })

  test('a stream resumed far behind sends every change since its cursor in order, page after page', async () => {
    const o = await createOrg()
    const start = expectOk(await h.request('GET', '/v1/changes/cursor', { key: o.key })).cursor
    for (let i = 0; i < 250; i++) expectOk(await h.request('PUT', `/v1/memories/k${i}`, { key: o.key, body: { value: i } }))
    const s = await openStream(`/v1/events/stream?types=memory.set&cursor=${start}`, o.key)
    try {
      const events = await until(
        async () => s.events,
        e => e.length >= 250,
      )
      const seqs = events.map(e => e.data.seq)
      expect(events.length).toBe(250)
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b))
      expect(new Set(seqs).size).toBe(250)
    } finally {
      s.close()
    }
  })

  test('past EVENT_STREAMS_PER_ORG open streams, the next is 429 until one closes; other organizations are not counted', async () => {
    const o = await createOrg()
    const open = await Promise.all(Array.from({ length: CAP }, () => openStream('/v1/events/stream', o.key)))
    try {
      expect(open.map(s => s.res.status)).toEqual(Array(CAP).fill(200))
      const refused = await fetch(`${base}/v1/events/stream`, { headers: { authorization: `Bearer ${o.key}` } })
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('5')
      const body = (await refused.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('rate_limited')
      expect(body.error.message).toContain(`at most ${CAP} open streams`)
      const other = await openStream('/v1/events/stream', org.key)
      expect(other.res.status).toBe(200)
      other.close()
      open[0]!.close()
      const again = await until(
        async () => {
          const s = await openStream('/v1/events/stream', o.key)
          if (s.res.status !== 200) await s.res.body?.cancel()
          return s
        },
        s => s.res.status === 200,
        5000,
      )
      expect(again.res.status).toBe(200)
      again.close()
    } finally {
      for (const s of open) s.close()
    }
  })

  test('a connection key streams only its address; another address is 403, another organization`s inbox 404', async () => {
    const o = await createOrg()
    const bound = await managedAddress(h.ctx, o.orgId)
    const other = await managedAddress(h.ctx, o.orgId)
    const inv = expectOk(await h.request('POST', '/v1/agent-connections', { key: o.key, body: { address: bound } }), 201)
    const conn = expectOk(await h.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    const s = await openStream('/v1/events/stream', conn)
    const all = await openStream('/v1/events/stream?types=email.received', o.key)
    try {
      expect(s.res.status).toBe(200)
      await mail(other, 'for someone else')
      await mail(bound, 'for the agent')
      await until(
        async () => all.events.length,
        n => n >= 2,
      )
      await until(
        async () => s.events.length,
        n => n >= 1,
      )
      expect(subjects(s.events)).toEqual(['for the agent'])
      expect(subjects(all.events)).toEqual(['for someone else', 'for the agent'])
    } finally {
      s.close()
      all.close()
    }
    const refused = await fetch(`${base}/v1/events/stream?address=${encodeURIComponent(other)}`, { headers: { authorization: `Bearer ${conn}` } })
    expect(refused.status).toBe(403)
    const foreign = await createOrg()
    const foreignInbox = expectOk(await h.request('GET', '/v1/inboxes', { key: o.key }))[0].id
    expectError(await h.request('GET', `/v1/events/stream?inbox_id=${foreignInbox}`, { key: foreign.key }), 404, 'not_found')
  })

  test('inbox_id confines the stream to that inbox`s address', async () => {
    const a = await managedAddress(h.ctx, org.orgId)
    const inbox = expectOk(await h.request('GET', '/v1/inboxes?limit=100', { key: org.key })).find((i: { address: string }) => i.address === a)
    const s = await openStream(`/v1/events/stream?inbox_id=${inbox.id}`, org.key)
    try {
      await mail(address, 'elsewhere')
      await mail(a, 'here')
      await until(
        async () => s.events.length,
        n => n >= 1,
      )
      expect(subjects(s.events)).toEqual(['here'])
    } finally {
      s.close()
    }
  })

  test('bad input is refused before the stream starts', async () => {
    expectError(await h.request('GET', '/v1/events/stream', {}), 401, 'unauthorized')
    expectError(await h.request('GET', '/v1/events/stream', { key: org.key, headers: { 'last-event-id': 'nonsense' } }), 400, 'validation_error', /^cursor: /)
    expectError(await h.request('GET', '/v1/events/stream?types=no%20such', { key: org.key }), 400, 'validation_error', /^types: /)
    const other = await createOrg()
    const theirs = expectOk(await h.request('GET', '/v1/changes/cursor', { key: other.key })).cursor
    expectError(await h.request('GET', `/v1/events/stream?cursor=${theirs}`, { key: org.key }), 400, 'validation_error', /^cursor: /)
  })

  test('one shared tick writes heartbeats; ending the streams (shutdown) closes them and refuses new ones', async () => {
    const streams = new EventStreams(mailEvents(h.ctx), 100)
    const abort = new AbortController()
    const filter = { types: [], prefixes: [], address: null }
    const res = await streams.stream(h.ctx, { orgId: org.orgId, after: null, filter, cap: 5, signal: abort.signal })
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let text = ''
    while (!text.includes(': heartbeat')) text += decoder.decode((await reader.read()).value)
    expect(text).toStartWith('retry: ')
    streams.endAll()
    for (;;) if ((await reader.read()).done) break
    expect(streams.size).toBe(0)
    await expect(streams.stream(h.ctx, { orgId: org.orgId, after: null, filter, cap: 5, signal: abort.signal })).rejects.toMatchObject({ code: 'rate_limited' })
  })

  test('a stream confined to an address is woken only by changes about it', async () => {
    const events = mailEvents(h.ctx)
    const mine = events.subscribeChanges(org.orgId, 'me@agents.test.local')
    const anyone = events.subscribeChanges(org.orgId)
    try {
      events.emitChange(org.orgId, ['someone@agents.test.local'])
      expect([mine.take(), anyone.take()]).toEqual([false, true])
      events.emitChange(org.orgId, ['ME@agents.test.local'])
      expect([mine.take(), anyone.take()]).toEqual([true, true])
      events.emitChange(org.orgId)
      expect([mine.take(), anyone.take()]).toEqual([true, true])
    } finally {
      mine.close()
      anyone.close()
    }
  })

  test('over LISTEN, the NOTIFY of a change names its addresses: mail for another address does not wake a confined stream', async () => {
    const events = new MailEvents()
    await events.listen(await testSql())
    const a = await managedAddress(h.ctx, org.orgId)
    const mine = events.subscribeChanges(org.orgId, a)
    const anyone = events.subscribeChanges(org.orgId)
    try {
      await mail(address, 'not for a')
      await until(
        async () => anyone.take(),
        woken => woken,
      )
      expect(mine.take()).toBe(false)
      await mail(a, 'for a')
      expect(
        await until(
          async () => mine.take(),
          woken => woken,
        ),
      ).toBe(true)
    } finally {
      mine.close()
      anyone.close()
      await events.close()
    }
  })

  test.skipIf(db.kind !== 'postgres')(
    'a service stopping (SIGTERM) ends its open streams at once, well within its grace',
    async () => {
      const service = await startService({
        DATABASE_URL: db.url,
        PORT: '0',
        HOST: '127.0.0.1',
        SECRET_KEY: TEST_SECRET,
        LOG_LEVEL: 'silent',
        MANAGED_DOMAIN: 'agents.test.local',
        ROLES: 'api',
        SHUTDOWN_GRACE_MS: '8000',
      })
      const res = await fetch(`http://127.0.0.1:${service.running.apiPort}/v1/events/stream`, { headers: { authorization: `Bearer ${org.key}` } })
      expect(res.status).toBe(200)
      const reader = res.body!.getReader()
      await reader.read()
      const started = Date.now()
      await service.shutdown('SIGTERM')
      for (;;) if ((await reader.read()).done) break
      expect(Date.now() - started).toBeLessThan(3000)
    },
    20_000,
  )
})
