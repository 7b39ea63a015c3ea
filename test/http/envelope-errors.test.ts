/** The v1 envelopes and the error conventions every route shares. */
import { describe, expect, test } from 'bun:test'
import { TransformKind } from '@sinclair/typebox'
import { t } from 'elysia'
import { createApp } from '../../src/app'
import { createContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { connectUrl } from '../../src/db/client'
import { createOrg, testApp, testConfig, TEST_SECRET, type TestResponse } from '../helpers/app'
import { expectError, expectOk, expectRequestId } from '../helpers/envelope'
import { PLUGINS } from '../../src/plugins'

const app = await testApp({ MAX_BODY_BYTES: '2048' })
const org = await createOrg()
const request = (method: string, path: string, opts: Parameters<typeof app.request>[2] = {}) => app.request(method, path, { key: org.key, ...opts })

async function raw(req: Request): Promise<TestResponse> {
  const res = await app.app.handle(req)
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, headers: res.headers, body }
}

describe('success envelope', () => {
  test('an object payload is {success: true, data}', async () => {
    const res = await request('GET', '/v1/whoami')
    expectOk(res)
    expect(Object.keys(res.body).sort()).toEqual(['data', 'success'])
  })

  test('a list is {success: true, data: [...], meta: {total, limit, cursor}}', async () => {
    const res = await request('GET', '/v1/api-keys')
    expect(Array.isArray(expectOk(res))).toBe(true)
    expect(Object.keys(res.body).sort()).toEqual(['data', 'meta', 'success'])
    expect(res.body.meta).toEqual({ total: 1, limit: 50, cursor: null })
  })

  test('a payload that does not match its declared response schema is a 500 internal_error, never sent', async () => {
    const payloads: Record<string, unknown> = { ok: { version: 3 }, wrong: { version: 'three' }, extra: { version: 3, secret_column: 'hidden' } }
    const probe = createApp(app.ctx).get('/v1/probe-response/:kind', ({ params }) => payloads[params.kind], {
      response: { 200: t.Object({ version: t.Integer() }) },
    })
    const answer = (kind: string) =>
      probe.handle(new Request(`http://api.test.local/v1/probe-response/${kind}`)).then(async r => ({ status: r.status, text: await r.text() }))
    expect(await answer('ok')).toEqual({ status: 200, text: '{"success":true,"data":{"version":3}}' })
    const wrong = await answer('wrong')
    expect(wrong.status).toBe(500)
    expect(JSON.parse(wrong.text)).toMatchObject({ success: false, error: { code: 'internal_error' } })
    expect(wrong.text).not.toContain('three')
    // a field the schema does not declare is refused too: internal columns never leak
    const extra = await answer('extra')
    expect(extra.status).toBe(500)
    expect(extra.text).not.toContain('hidden')
  })

  test('response schemas hold no transform that changes a value: the app checks responses without encoding them', () => {
    const encoders = new Set<(value: unknown) => unknown>()
    const walk = (schema: unknown, seen: Set<unknown>) => {
      if (!schema || typeof schema !== 'object' || seen.has(schema)) return
      seen.add(schema)
      if (TransformKind in schema) encoders.add((schema as Record<symbol, { Encode: (value: unknown) => unknown }>)[TransformKind]!.Encode)
      for (const value of Object.values(schema)) walk(value, seen)
    }
    for (const route of app.app.routes as unknown as { hooks: { response?: unknown } }[]) walk(route.hooks.response, new Set())
    expect(encoders.size).toBeGreaterThan(0)
    const samples = [3, '3', 'text', null, new Date(0), { a: 1 }, [1]]
    for (const encode of encoders) for (const sample of samples) expect(encode(sample)).toBe(sample)
  })
})

describe('request ids', () => {
  test('whoami.request_id equals the X-Request-Id header', async () => {
    const res = await request('GET', '/v1/whoami')
    expect(expectOk(res).request_id).toBe(res.headers.get('x-request-id')!)
  })

  test('every response carries a distinct req_ id, errors included', async () => {
    const responses = [
      await request('GET', '/v1/whoami'),
      await request('GET', '/v1/whoami'),
      await app.request('GET', '/v1/whoami'),
      await request('GET', '/v1/no-such-route'),
      await request('POST', '/v1/api-keys', { body: '{' }),
      await app.request('GET', '/v1'),
    ]
    for (const r of responses) expectRequestId(r)
    expect(new Set(responses.map(r => r.headers.get('x-request-id'))).size).toBe(responses.length)
  })
})

describe('unknown routes', () => {
  test('an unknown path is 404 not_found', async () => {
    expectError(await request('GET', '/v1/no-such-route'), 404, 'not_found')
    expectError(await app.request('GET', '/v2/whoami'), 404, 'not_found')
  })

  test('a known path with another method is 405 method_not_allowed with Allow, in the envelope', async () => {
    const res = await request('PUT', '/v1/whoami')
    expectError(res, 405, 'method_not_allowed', 'PUT /v1/whoami: method not allowed; allowed: GET')
    expect(res.headers.get('allow')).toBe('GET')
    const withId = await request('POST', `/v1/api-keys/${crypto.randomUUID()}`)
    expectError(withId, 405, 'method_not_allowed')
    expect(withId.headers.get('allow')).toBe('DELETE')
    expect((await request('PATCH', '/v1/api-keys')).headers.get('allow')).toBe('GET, POST')
  })
})

describe('malformed and oversized bodies', () => {
  test('malformed JSON is 400 validation_error about the body', async () => {
    const res = await request('POST', '/v1/api-keys', { body: '{"name": "x",' })
    expectError(res, 400, 'validation_error', /^body: /)
  })

  test('a declared content-length over MAX_BODY_BYTES is 413 before the body is read', async () => {
    const res = await request('POST', '/v1/api-keys', { body: '{"name":"x"}', headers: { 'content-length': '999999' } })
    expectError(res, 413, 'payload_too_large', /^body: .*2048/)
  })

  test('an oversized body with its content-length is 413', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(4000) })
    const res = await request('POST', '/v1/api-keys', { body, headers: { 'content-length': String(body.length) } })
    expectError(res, 413, 'payload_too_large')
  })

  test('an oversized chunked body without content-length is 413', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(1000))
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"name":"'))
      },
      pull(c) {
        if (sent++ < 5) c.enqueue(chunk)
        else {
          c.enqueue(new TextEncoder().encode('"}'))
          c.close()
        }
      },
    })
    const req = new Request('http://api.test.local/v1/api-keys', {
      method: 'POST',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9' },
      body: stream,
      duplex: 'half',
    } as RequestInit)
    expect(req.headers.get('content-length')).toBeNull()
    expectError(await raw(req), 413, 'payload_too_large')
  })

  test('a body just under the limit is accepted', async () => {
    const res = await request('POST', '/v1/api-keys', { body: { name: 'n'.repeat(100) } })
    expect(res.status).toBe(201)
  })
})

describe('schema validation names the field', () => {
  test('an unknown body field', async () => {
    expectError(await request('POST', '/v1/api-keys', { body: { name: 'k', colour: 'red' } }), 400, 'validation_error', 'colour: is not a known field')
  })

  test('a wrong type', async () => {
    expectError(await request('POST', '/v1/api-keys', { body: { name: 42 } }), 400, 'validation_error', 'name: must be a string')
    expectError(await request('GET', '/v1/api-keys?limit=ten'), 400, 'validation_error', 'limit: must be an integer')
  })

  test('a value of the right type inside a union is explained by that variant: which address, and what it must be', async () => {
    const mail = { from: 'a@agents.test.local', subject: 's', body_text: 'x' }
    const demo = (body: unknown) => app.request('POST', '/v1/send-mail/demo', { body })
    expectError(await demo({ ...mail, to: 'not-an-email' }), 400, 'validation_error', 'to: must be an email address')
    expectError(await demo({ ...mail, to: ['ok@example.test', 'not-an-email'] }), 400, 'validation_error', 'to[1]: must be an email address')
    expectError(await demo({ ...mail, to: 42 }), 400, 'validation_error', 'to: must be a string or an array')
  })

  test('a missing required field is reported once, as missing', async () => {
    expectError(await request('POST', '/v1/api-keys', { body: {} }), 400, 'validation_error', 'name: is required')
  })

  test('a constraint violation', async () => {
    expectError(await request('POST', '/v1/api-keys', { body: { name: '' } }), 400, 'validation_error', 'name: must not be empty')
    expectError(await request('GET', '/v1/api-keys?limit=0'), 400, 'validation_error', 'limit: must be at least 1')
    expectError(await request('GET', '/v1/api-keys?limit=101'), 400, 'validation_error', 'limit: must be at most 100')
  })

  test('a body that is not an object', async () => {
    expectError(await request('POST', '/v1/api-keys', { body: [1, 2] }), 400, 'validation_error', /^body: /)
    expectError(await request('POST', '/v1/api-keys'), 400, 'validation_error', /^body: /)
  })

  test('an unknown query parameter', async () => {
    expectError(await request('GET', '/v1/api-keys?sort=name'), 400, 'validation_error', 'sort: is not a known field')
  })

  test('a malformed path parameter', async () => {
    expectError(await request('DELETE', '/v1/api-keys/not-a-uuid'), 400, 'validation_error', /^id: /)
  })

  test('validation failures change nothing', async () => {
    const before = expectOk(await request('GET', '/v1/api-keys')).length
    await request('POST', '/v1/api-keys', { body: { name: 'ok', extra: true } })
    expect(expectOk(await request('GET', '/v1/api-keys')).length).toBe(before)
  })
})

describe('server faults', () => {
  test('an unreachable database is 503 database_unavailable with Retry-After, no stack or address', async () => {
    const ctx = createContext(testConfig(), connectUrl('postgres://postgres@127.0.0.1:1/x', 1), new ServerKeys(TEST_SECRET), { plugins: PLUGINS })
    const dead = createApp(ctx)
    try {
      const res = await dead.handle(new Request('http://api.test.local/v1/whoami', { headers: { authorization: `Bearer ${org.key}` } }))
      const text = await res.text()
      const parsed: TestResponse = { status: res.status, headers: res.headers, body: JSON.parse(text) }
      expectError(parsed, 503, 'database_unavailable', /^database: unreachable at the moment; retry after \d+ seconds$/)
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(text).not.toContain('ECONNREFUSED')
      expect(text).not.toContain('127.0.0.1')
    } finally {
      await ctx.sql.end({ timeout: 1 })
    }
  })
})
