/**
 * The api role's listener over real sockets (src/http/serve.ts): pipelined requests, slow-loris
 * clients, many idle connections, bytes no client library would send.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import { createApp } from '../../src/app'
import { serveHttp } from '../../src/http/serve'
import { LONGEST_WAIT_MS, startRoles } from '../../src/roles'
import { ConnectionBudget } from '../../src/connection-budget'
import { MAX_WAIT_SECONDS } from '../../src/emails/model'
import { createOrg, testApp } from '../helpers/app'

const HEAD_TIMEOUT_MS = 400
const { ctx } = await testApp({ PORT: '0', HOST: '127.0.0.1' })
// the role as index.ts starts it: what a client really meets
const role = await startRoles(ctx, ['api'], { embedded: true })
// the same listener with a short head deadline, so the slow tests stay short
const quick = await serveHttp(createApp(ctx), { port: 0, hostname: '127.0.0.1', maxBodyBytes: 1 << 20, headTimeoutMs: HEAD_TIMEOUT_MS })

// started now, answered at the end of the file: the wait costs the file no time of its own
const longWait = (async () => {
  const org = await createOrg()
  return fetch(`http://127.0.0.1:${role.apiPort}/v1/emails?wait=33`, { headers: { authorization: `Bearer ${org.key}` } })
})()

afterAll(async () => {
  await quick.stop()
  await role.stop()
})

interface Client {
  socket: Socket<undefined>
  text(): string
  closed(): boolean
}

async function connect(port: number): Promise<Client> {
  let received = ''
  let closed = false
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      data(_s, bytes) {
        received += new TextDecoder().decode(bytes)
      },
      close() {
        closed = true
      },
      error() {
        closed = true
      },
    },
  })
  return { socket, text: () => received, closed: () => closed }
}

/** Waits (bounded) until `done` holds; the bound only keeps a broken server from hanging the suite. */
async function until(done: () => boolean, ms = 5_000) {
  const end = Date.now() + ms
  while (!done() && Date.now() < end) await Bun.sleep(10)
}

// a body sent with its content-length does not end with a line break: the next status line follows it directly
const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map(m => Number(m[1]))

describe('HTTP/1.1 pipelining', () => {
  test('two requests in one packet, each awaiting the database, get two answers in order', async () => {
    const c = await connect(role.apiPort!)
    c.socket.write('GET /v1/health HTTP/1.1\r\nHost: a\r\n\r\nGET /v1/no-such HTTP/1.1\r\nHost: a\r\n\r\n')
    await until(() => statuses(c.text()).length === 2)
    expect(statuses(c.text())).toEqual([200, 404])
    expect(c.text().indexOf('"status":"ok"')).toBeLessThan(c.text().indexOf('"not_found"'))
    c.socket.end()
  })

  test('a POST with a body, then a GET, in one packet', async () => {
    const c = await connect(role.apiPort!)
    const body = JSON.stringify({ from: 'a@example.test', to: 'b@example.test', subject: 's', body_text: 'x' })
    c.socket.write(
      `POST /v1/send-mail/demo HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        'GET /v1 HTTP/1.1\r\nHost: a\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: a\r\n\r\n',
    )
    await until(() => statuses(c.text()).length === 3)
    expect(statuses(c.text())).toEqual([200, 200, 200])
    expect(c.text()).toContain('"demo":true')
    c.socket.end()
  })
})

describe('slow and idle clients', () => {
  test('a slow-loris client trickling header lines is cut off; others are served meanwhile', async () => {
    const slow = await connect(quick.port)
    slow.socket.write('GET /v1/health HTTP/1.1\r\nHost: a\r\n')
    let lines = 0
    // one header line every 50 ms for up to 5 deadlines: each byte arrives well within any idle timeout
    while (!slow.closed() && lines < (5 * HEAD_TIMEOUT_MS) / 50) {
      slow.socket.write(`X-Trickle-${lines++}: x\r\n`)
      if (lines === 3) expect((await fetch(`http://127.0.0.1:${quick.port}/v1/health`)).status).toBe(200)
      await Bun.sleep(50)
    }
    await until(slow.closed, 2 * HEAD_TIMEOUT_MS)
    expect(slow.closed()).toBe(true)
    expect(slow.text()).toBe('')
  })

  test('500 idle connections neither block a new client nor stay open past the head deadline', async () => {
    const idle = await Promise.all(Array.from({ length: 500 }, () => connect(quick.port)))
    const res = await fetch(`http://127.0.0.1:${quick.port}/v1`)
    expect(res.status).toBe(200)
    await until(() => idle.every(c => c.closed()), 10 * HEAD_TIMEOUT_MS)
    expect(idle.filter(c => !c.closed()).length).toBe(0)
  })

  test('a kept-alive connection serves several requests, then closes once idle', async () => {
    const c = await connect(quick.port)
    for (let i = 1; i <= 3; i++) {
      c.socket.write('GET /v1 HTTP/1.1\r\nHost: a\r\n\r\n')
      await until(() => statuses(c.text()).length === i)
    }
    expect(statuses(c.text())).toEqual([200, 200, 200])
    await until(c.closed, 10 * HEAD_TIMEOUT_MS)
    expect(c.closed()).toBe(true)
  })
})

describe('long requests', () => {
  test('nothing in the listener cuts a request off before the longest long-poll has had its time', () => {
    const timeouts = role.api!.timeouts()
    expect(timeouts.socket).toBe(0)
    expect(timeouts.request).toBeGreaterThan(LONGEST_WAIT_MS)
    expect(LONGEST_WAIT_MS).toBe(MAX_WAIT_SECONDS * 1000)
  })

  test('a long-poll longer than the idle timeout that used to reset it (31.6 s) is answered', async () => {
    const res = await longWait
    expect(res.status).toBe(200)
    expect(((await res.json()) as { success: boolean; data: unknown[] })).toMatchObject({ success: true, data: [] })
  }, 60_000)
})

describe('connections past the budget', () => {
  test('are answered 429 in the envelope and closed at once; a closed one gives its place back', async () => {
    const budget = new ConnectionBudget(2)
    const small = await serveHttp(createApp(ctx), { port: 0, hostname: '127.0.0.1', maxBodyBytes: 1 << 20, budget })
    try {
      const held = [await connect(small.port), await connect(small.port)]
      await until(() => budget.used === 2)
      const refused = await connect(small.port)
      await until(refused.closed)
      expect(refused.closed()).toBe(true)
      const [head, body] = refused.text().split('\r\n\r\n')
      expect(head).toStartWith('HTTP/1.1 429 ')
      expect(head).toContain('retry-after: 1')
      expect(JSON.parse(body!)).toMatchObject({ success: false, error: { code: 'rate_limited' } })
      held[0]!.socket.end()
      await until(() => budget.used === 1)
      expect((await fetch(`http://127.0.0.1:${small.port}/v1/health`)).status).toBe(200)
      held[1]!.socket.end()
    } finally {
      await small.stop(true)
    }
  })
})

describe('bytes no client library sends', () => {
  test('a NUL in a header value is refused with 400, never a 500', async () => {
    const c = await connect(role.apiPort!)
    c.socket.write('GET /v1 HTTP/1.1\r\nHost: a\r\nX-Odd: a\u0000b\r\n\r\n')
    await until(() => statuses(c.text()).length === 1 || c.closed())
    expect(statuses(c.text())).toEqual([400])
    c.socket.end()
  })

  test('the client address is the peer of the connection: per-address limits see it', async () => {
    const res = await fetch(`http://127.0.0.1:${role.apiPort}/v1/agent-connections/setup`)
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit-limit')).toBe('120')
  })
})
