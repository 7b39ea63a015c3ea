/**
 * The api role's listener over real sockets (src/http/serve.ts): pipelined requests, slow-loris
 * clients, many idle connections, request bodies however they arrive, bytes no client library
 * would send.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import type { Socket } from 'bun'
import net from 'node:net'
import { createApp } from '../../src/app'
import { largestBodyLimit } from '../../src/http/boundary'
import { serveHttp, WHOLE_BODY_BYTES } from '../../src/http/serve'
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
// a small default body limit, with the listener's own limit set as the api role sets it
const SMALL_LIMIT = 2048
const smallApp = createApp((await testApp({ PORT: '0', HOST: '127.0.0.1', MAX_BODY_BYTES: String(SMALL_LIMIT) })).ctx)
const limited = await serveHttp(smallApp, { port: 0, hostname: '127.0.0.1', maxBodyBytes: 2 * largestBodyLimit(smallApp, SMALL_LIMIT) })

// started now, answered at the end of the file: the wait costs the file no time of its own
const longWait = (async () => {
  const org = await createOrg()
  return fetch(`http://127.0.0.1:${role.apiPort}/v1/emails?wait=33`, { headers: { authorization: `Bearer ${org.key}` } })
})()

afterAll(async () => {
  await quick.stop()
  await limited.stop()
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

describe('request bodies', () => {
  const post = (key: string, headers: string) =>
    `POST /v1/api-keys HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${headers}\r\n`
  const chunked = (text: string) =>
    text
      .match(/[\s\S]{1,700}/g)!
      .map(c => `${c.length.toString(16)}\r\n${c}\r\n`)
      .join('') + '0\r\n\r\n'
  /** The status and the envelope of the one answer on `c`. */
  async function answer(c: Client) {
    await until(() => /\r\n\r\n\{.*\}$/s.test(c.text()) || c.closed())
    const [head, body] = c.text().split('\r\n\r\n')
    return { status: statuses(head ?? '')[0], body: body ? JSON.parse(body) : undefined }
  }

  test('a short body arriving in several packets is read whole', async () => {
    const org = await createOrg()
    const body = JSON.stringify({ name: 'p'.repeat(90) })
    const c = await connect(quick.port)
    c.socket.write(post(org.key, `Content-Length: ${body.length}\r\n`) + body.slice(0, 30))
    await Bun.sleep(30)
    c.socket.write(body.slice(30, 60))
    await Bun.sleep(30)
    c.socket.write(body.slice(60))
    const res = await answer(c)
    expect(res.status).toBe(201)
    expect(res.body.data.name).toBe('p'.repeat(90))
    c.socket.end()
  })

  test('a chunked body, and one longer than the listener reads whole, reach the route as sent', async () => {
    const org = await createOrg()
    const small = await connect(quick.port)
    small.socket.write(post(org.key, 'Transfer-Encoding: chunked\r\n') + chunked(JSON.stringify({ name: 'chunked' })))
    expect(await answer(small)).toMatchObject({ status: 201, body: { data: { name: 'chunked' } } })
    small.socket.end()
    // past WHOLE_BODY_BYTES the body streams to the route: an over-long name is the route's 400, not a cut-off
    const long = JSON.stringify({ name: 'l'.repeat(WHOLE_BODY_BYTES) })
    const big = await connect(quick.port)
    big.socket.write(post(org.key, `Content-Length: ${long.length}\r\n`) + long)
    expect(await answer(big)).toMatchObject({ status: 400, body: { error: { code: 'validation_error', message: expect.stringMatching(/^name: /) } } })
    big.socket.end()
  })

  test('an empty body, with a zero length or none, is a 400 about the body', async () => {
    const org = await createOrg()
    const answers = []
    for (const length of ['Content-Length: 0\r\n', '']) {
      const c = await connect(quick.port)
      c.socket.write(post(org.key, length))
      answers.push(await answer(c))
      c.socket.end()
    }
    expect(answers[0]).toMatchObject({ status: 400, body: { error: { code: 'validation_error', message: expect.stringMatching(/^body: /) } } })
    expect(answers[1]).toEqual(answers[0]!)
  })

  test('a body over the route limit is 413, short, long or chunked; a long declared one before it is sent', async () => {
    const org = await createOrg()
    const over = JSON.stringify({ name: 'o'.repeat(SMALL_LIMIT) })
    for (const headers of [`Content-Length: ${over.length}\r\n`, 'Transfer-Encoding: chunked\r\n']) {
      const c = await connect(limited.port)
      c.socket.write(post(org.key, headers) + (headers.startsWith('Transfer') ? chunked(over) : over))
      expect(await answer(c)).toMatchObject({
        status: 413,
        body: { error: { code: 'payload_too_large', message: `body: must be at most ${SMALL_LIMIT} bytes` } },
      })
      c.socket.end()
    }
    const early = await connect(limited.port)
    early.socket.write(post(org.key, `Content-Length: ${10 * WHOLE_BODY_BYTES}\r\n`))
    expect(await answer(early)).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } })
    early.socket.end()
    const under = await connect(limited.port)
    const fits = JSON.stringify({ name: 'u'.repeat(100) })
    under.socket.write(post(org.key, `Content-Length: ${fits.length}\r\n`) + fits)
    expect((await answer(under)).status).toBe(201)
    under.socket.end()
  })

  test('a body cut off by the client gets no answer; its connection closes and the listener serves on', async () => {
    const org = await createOrg()
    const before = (await fetch(`http://127.0.0.1:${quick.port}/v1/api-keys`, { headers: { authorization: `Bearer ${org.key}` } }).then(r => r.json())) as {
      meta: { total: number }
    }
    const c = await connect(quick.port)
    c.socket.write(post(org.key, 'Content-Length: 100\r\n') + '{"name":"cut')
    await Bun.sleep(30)
    c.socket.end()
    await until(c.closed)
    expect(c.closed()).toBe(true)
    expect(c.text()).toBe('')
    const after = (await fetch(`http://127.0.0.1:${quick.port}/v1/api-keys`, { headers: { authorization: `Bearer ${org.key}` } }).then(r => r.json())) as {
      meta: { total: number }
    }
    expect(after.meta.total).toBe(before.meta.total)
  })
})

describe('bodies the route ignores', () => {
  /** A client that writes its whole request before it reads (as Python's http.client does): what it gets back, or how its write failed. */
  function sendWholeThenRead(port: number, head: string, body: Buffer) {
    return new Promise<{ text: string; error?: string }>(resolve => {
      const socket = net.connect(port, '127.0.0.1')
      let text = ''
      let error: string | undefined
      socket.on('data', d => (text += d.toString()))
      socket.on('error', e => (error = (e as NodeJS.ErrnoException).code ?? e.message))
      socket.on('close', () => resolve({ text, error }))
      socket.write(head)
      socket.write(body)
    })
  }

  test('a GET with a body larger than the socket buffers, on a connection the client asked to close, is answered, not reset', async () => {
    const server = await serveHttp(createApp(ctx), { port: 0, hostname: '127.0.0.1', maxBodyBytes: 32 << 20 })
    try {
      const body = Buffer.alloc(16 << 20, 120)
      const res = await sendWholeThenRead(
        server.port,
        `GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`,
        body,
      )
      expect(res.error).toBeUndefined()
      expect(statuses(res.text)).toEqual([200])
    } finally {
      await server.stop(true)
    }
  })

  test('past the listener limit it is 413 in the envelope, answered before the body is sent', async () => {
    const c = await connect(quick.port)
    c.socket.write(`GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: ${4 << 20}\r\n\r\n`)
    await until(() => c.closed())
    expect(statuses(c.text())).toEqual([413])
    expect(JSON.parse(c.text().split('\r\n\r\n')[1]!)).toMatchObject({
      success: false,
      error: { code: 'payload_too_large', message: `body: must be at most ${1 << 20} bytes` },
    })
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
    expect((await res.json()) as { success: boolean; data: unknown[] }).toMatchObject({ success: true, data: [] })
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
