/** The HTTP attempt against real loopback servers: where it connects, what it follows, when it gives up. */
import { afterAll, describe, expect, test } from 'bun:test'
import { postWebhook } from '../../src/egress/checked-fetch'
import type { CheckedUrl } from '../../src/egress/url-safety'

const seen: { host: string | null; clientPort: number | undefined }[] = []
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req, srv) {
    seen.push({ host: req.headers.get('host'), clientPort: srv.requestIP(req)?.port })
    const path = new URL(req.url).pathname
    if (path === '/redirect') return new Response(null, { status: 302, headers: { location: '/ok' } })
    if (path === '/slow') await Bun.sleep(2000)
    if (path === '/large') return new Response('x'.repeat(1024 * 1024))
    return new Response('ok', { headers: { 'service-delivery-confirmed': 'evt_1' } })
  },
})
afterAll(() => server.stop(true))

/** A URL whose name resolves nowhere, checked to the loopback address: the attempt must use the address. */
const checked = (path: string): CheckedUrl => ({ url: new URL(`http://hooks.invalid:${server.port}${path}`), address: '127.0.0.1', family: 4 })

describe('a webhook attempt', () => {
  test('connects to the checked address, names the host in Host, and keeps the connection for the next attempt', async () => {
    seen.length = 0
    const first = await postWebhook(checked('/ok'), '{}', {}, 1000, 'evt_1')
    const second = await postWebhook(checked('/ok'), '{}', {}, 1000, 'evt_2')
    expect(first).toMatchObject({ status: 200, body: 'ok', confirmed: true })
    expect(second).toMatchObject({ status: 200, ok: true, confirmed: false })
    expect(seen.map(s => s.host)).toEqual([`hooks.invalid:${server.port}`, `hooks.invalid:${server.port}`])
    expect(seen[1]!.clientPort).toBe(seen[0]!.clientPort!)
  })

  test('goes straight to the checked address even with a proxy in the environment', async () => {
    const saved = { http: process.env.HTTP_PROXY, all: process.env.ALL_PROXY }
    // a proxy that refuses every connection: going through it would fail the attempt
    process.env.HTTP_PROXY = process.env.ALL_PROXY = 'http://127.0.0.1:9'
    try {
      expect(await postWebhook(checked('/ok'), '{}', {}, 1000, 'evt_1')).toMatchObject({ status: 200, body: 'ok' })
    } finally {
      for (const [name, value] of [
        ['HTTP_PROXY', saved.http],
        ['ALL_PROXY', saved.all],
      ] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }
  })

  test('does not follow a redirect', async () => {
    expect(await postWebhook(checked('/redirect'), '{}', {}, 1000, 'evt_1')).toMatchObject({ status: 302, ok: false, confirmed: false })
  })

  test('gives up after the timeout', async () => {
    expect(await postWebhook(checked('/slow'), '{}', {}, 200, 'evt_1')).toMatchObject({ status: null, error: 'timeout', message: 'no answer within 200 ms' })
  })

  test('keeps only the first 64 KB of a large answer', async () => {
    const outcome = await postWebhook(checked('/large'), '{}', {}, 1000, 'evt_1')
    expect(outcome.status).toBe(200)
    expect(outcome.body.length).toBe(64 * 1024)
  })

  test('a refused connection is connection_failed', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    const url = new URL(`http://hooks.invalid:${closed.port}/`)
    closed.stop(true)
    expect(await postWebhook({ url, address: '127.0.0.1', family: 4 }, '{}', {}, 1000, 'evt_1')).toMatchObject({ status: null, error: 'connection_failed' })
  })
})
