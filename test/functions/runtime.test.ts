/**
 * The guest runtime (sandbox/runtime.js) in a real QuickJS sandbox: each web API a function
 * may use, checked against what Bun's own implementation answers for the same input.
 */
import { afterAll, expect, test } from 'bun:test'
import { createHmac, createHash } from 'node:crypto'
import { SandboxPool } from '../../src/functions/sandbox/pool'
import { runLimits, RESPONSE_BYTES } from '../../src/functions/limits'
import type { GuestFetch, RunResult } from '../../src/functions/sandbox/protocol'

const pool = new SandboxPool(1)
afterAll(() => pool.stop())
const limits = { ...runLimits({ FUNCTION_CPU_MS: 5000, FUNCTION_WALL_CLOCK_MS: 10_000 }) }
const fetched: GuestFetch[] = []

async function run(body: string): Promise<RunResult & { json: any }> {
  const code = `export default { async fetch(request, env) { ${body} } }`
  const request = {
    method: 'POST',
    url: 'https://functions.internal/t?x=1',
    headers: [
      ['content-type', 'application/json'],
      ['x-a', 'b'],
    ] as [string, string][],
    body: Buffer.from('{"hello":"wörld"}').toString('base64'),
  }
  const result = await pool.run({ kind: 'invoke', code, request, env: { KEY: 'value' }, limits }, async arg => {
    fetched.push(arg)
    return {
      status: 201,
      statusText: 'Created',
      headers: [['x-echo', arg.method]],
      body: Buffer.from(`echo ${arg.url}`).toString('base64'),
      url: arg.url,
      redirected: false,
    }
  })
  const json = result.response ? JSON.parse(Buffer.from(result.response.body, 'base64').toString() || 'null') : null
  return { ...result, json }
}

test('Request, Headers, env and Response.json', async () => {
  const r = await run(
    `return Response.json({ method: request.method, url: request.url, a: request.headers.get('X-A'), body: await request.json(), env: env.KEY, frozen: Object.isFrozen(env) })`,
  )
  expect(r.outcome).toBe('ok')
  expect(r.json).toEqual({ method: 'POST', url: 'https://functions.internal/t?x=1', a: 'b', body: { hello: 'wörld' }, env: 'value', frozen: true })
  expect(r.response!.headers).toContainEqual(['content-type', 'application/json'])
})

test('URL and URLSearchParams resolve and serialize like the platform', async () => {
  const cases = [
    ['/a/../b?c=d e#f', 'https://example.com/x/y'],
    ['https://User:pw@EXAMPLE.com:443/p/./q?x=1&y=%20', undefined],
    ['http://h:8080', undefined],
    ['?q=1', 'https://a.b/c/d'],
  ]
  const r = await run(
    `return Response.json(${JSON.stringify(cases)}.map(([u, b]) => { const x = new URL(u, b); return [x.href, x.origin, x.host, x.pathname, x.search, x.hash, x.searchParams.get('x')] }).concat([[new URLSearchParams({ a: '1 2', b: 'é&' }).toString()]]))`,
  )
  const expected = cases.map(([u, b]) => {
    const x = new URL(u!, b)
    return [x.href, x.origin, x.host, x.pathname, x.search, x.hash, x.searchParams.get('x')]
  })
  expect(r.json).toEqual([...expected, [new URLSearchParams({ a: '1 2', b: 'é&' }).toString()]])
})

test('TextEncoder, TextDecoder, atob and btoa agree with Bun', async () => {
  const text = 'héllo 👋 wörld'
  const r = await run(
    `const bytes = new TextEncoder().encode(${JSON.stringify(text)}); return Response.json({ bytes: [...bytes], back: new TextDecoder().decode(bytes), b64: btoa('bin\\x00\\xff'), raw: atob('aGVsbG8=') })`,
  )
  expect(r.json).toEqual({ bytes: [...new TextEncoder().encode(text)], back: text, b64: btoa('bin\x00\xff'), raw: 'hello' })
})

test('long texts and bodies (converted by the host) agree with Bun, NULs and lone surrogates included', async () => {
  const long = 'héllo 👋 wörld, '.repeat(40)
  const texts = [long, `${long}\u0000${long}`, `${long}\ud800 lone ${long}\udc00`]
  const binary = Array.from({ length: 300 }, (_, i) => String.fromCharCode((i * 7) % 256)).join('')
  const r = await run(`
    const texts = ${JSON.stringify(texts)}
    const encoded = texts.map(t => [...new TextEncoder().encode(t)])
    const decoded = encoded.map(b => new TextDecoder().decode(new Uint8Array(b)))
    const invalid = new TextDecoder().decode(new Uint8Array(Array.from({ length: 100 }, (_, i) => (i % 10 === 0 ? 0xff : i % 10 === 5 ? 0xc3 : 0x61))))
    const b64 = btoa(${JSON.stringify(binary)})
    const spaced = atob(b64.replace(/(.{76})/g, '$1\\n'))
    let bad = null
    try { atob('!' + b64) } catch (e) { bad = e.name }
    const echoed = await new Response(texts[0] + texts[2]).text()
    const fromOffset = new TextDecoder().decode(new TextEncoder().encode(texts[0]).subarray(3, 200))
    return Response.json({ encoded, decoded, invalid, b64, spaced: spaced === ${JSON.stringify(binary)}, bad, echoed, fromOffset, body: await request.text() })`)
  expect(r.outcome).toBe('ok')
  const encoder = new TextEncoder()
  expect(r.json.encoded).toEqual(texts.map(t => [...encoder.encode(t)]))
  expect(r.json.decoded).toEqual(texts.map(t => new TextDecoder().decode(encoder.encode(t))))
  expect(r.json.invalid).toBe(
    new TextDecoder().decode(new Uint8Array(Array.from({ length: 100 }, (_, i) => (i % 10 === 0 ? 0xff : i % 10 === 5 ? 0xc3 : 0x61)))),
  )
  expect(r.json).toMatchObject({
    b64: btoa(binary),
    spaced: true,
    bad: 'InvalidCharacterError',
    echoed: texts[0] + new TextDecoder().decode(encoder.encode(texts[2]!)),
    body: '{"hello":"wörld"}',
  })
  expect(r.json.fromOffset).toBe(new TextDecoder().decode(encoder.encode(texts[0]).subarray(3, 200)))
})

test('crypto: digest and HMAC match node:crypto; verify; random values and UUIDs', async () => {
  const r = await run(`
    const hex = b => [...new Uint8Array(b)].map(x => x.toString(16).padStart(2, '0')).join('')
    const data = new TextEncoder().encode('payload')
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode('secret'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify'])
    const sig = await crypto.subtle.sign('HMAC', key, data)
    return Response.json({
      sha256: hex(await crypto.subtle.digest('SHA-256', data)),
      sha1: hex(await crypto.subtle.digest({ name: 'SHA-1' }, data)),
      hmac: hex(sig),
      ok: await crypto.subtle.verify('HMAC', key, sig, data),
      bad: await crypto.subtle.verify('HMAC', key, new Uint8Array(32), data),
      uuid: crypto.randomUUID(),
      random: crypto.getRandomValues(new Uint8Array(16)).length,
    })`)
  expect(r.json).toMatchObject({
    sha256: createHash('sha256').update('payload').digest('hex'),
    sha1: createHash('sha1').update('payload').digest('hex'),
    hmac: createHmac('sha256', 'secret').update('payload').digest('hex'),
    ok: true,
    bad: false,
    random: 16,
  })
  expect(r.json.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
})

test('timers, clearTimeout, queueMicrotask, structuredClone and AbortController', async () => {
  const r = await run(`
    const order = []
    const cleared = setTimeout(() => order.push('cleared'), 5)
    clearTimeout(cleared)
    queueMicrotask(() => order.push('micro'))
    await new Promise(resolve => setTimeout(() => { order.push('timer'); resolve() }, 10))
    const source = { d: new Date(0), m: new Map([[1, { x: [1, 2] }]]), s: new Set(['a']), u: new Uint8Array([1, 2]) }
    source.self = source
    const copy = structuredClone(source)
    const controller = new AbortController()
    let aborted = null
    controller.signal.addEventListener('abort', () => { aborted = controller.signal.reason.name })
    controller.abort()
    let fetchAborted = null
    try { await fetch('https://example.com/', { signal: controller.signal }) } catch (e) { fetchAborted = e.name }
    return Response.json({ order, dateOk: copy.d.getTime() === 0 && copy.d !== source.d, map: copy.m.get(1).x, set: [...copy.s], bytes: [...copy.u], cycle: copy.self === copy, aborted, fetchAborted })`)
  expect(r.json).toEqual({
    order: ['micro', 'timer'],
    dateOk: true,
    map: [1, 2],
    set: ['a'],
    bytes: [1, 2],
    cycle: true,
    aborted: 'AbortError',
    fetchAborted: 'AbortError',
  })
})

test('fetch reaches the host with method, headers and body, and returns its answer', async () => {
  fetched.length = 0
  const r = await run(
    `const res = await fetch('https://api.example.com/x', { method: 'PUT', headers: { 'x-k': 'v' }, body: 'data' }); return Response.json({ status: res.status, ok: res.ok, text: await res.text(), echo: res.headers.get('x-echo') })`,
  )
  expect(r.json).toEqual({ status: 201, ok: true, text: 'echo https://api.example.com/x', echo: 'PUT' })
  expect(fetched[0]).toMatchObject({ url: 'https://api.example.com/x', method: 'PUT', body: Buffer.from('data').toString('base64') })
  expect(fetched[0]!.headers).toContainEqual(['x-k', 'v'])
})

test('console output is captured by level; a response over the size cap is exceeded_limit; a non-Response is an exception', async () => {
  const logs = await run(`console.log('a', { b: 1 }, [2]); console.error(new TypeError('bad')); return new Response('')`)
  expect(logs.logs.map(l => [l.level, l.message.split('\n')[0]])).toEqual([
    ['log', 'a { b: 1 } [ 2 ]'],
    ['error', 'TypeError: bad'],
  ])
  const big = await run(`return new Response(new Uint8Array(${RESPONSE_BYTES + 1}))`)
  expect(big.outcome).toBe('exceeded_limit')
  const wrong = await run(`return 'not a response'`)
  expect(wrong).toMatchObject({ outcome: 'exception', error: { name: 'TypeError' } })
})

test("nothing of one run's globals reaches the next cold run on the thread (each gets its own prepared instance)", async () => {
  const first = await run(`globalThis.leak = 'secret of the first'; Object.prototype.polluted = true; return Response.json(null)`)
  expect(first.outcome).toBe('ok')
  for (let i = 0; i < 3; i++) {
    const next = await run(`return Response.json([typeof globalThis.leak, ({}).polluted === undefined])`)
    expect(next.json).toEqual(['undefined', true])
  }
})
