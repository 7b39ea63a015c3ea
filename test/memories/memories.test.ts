/** Memories over HTTP: writes and reads, concurrency control, merge patch, lists, batches, TTL, quotas, boundaries. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { deleteExpiredMemories } from '../../src/memories/service'

let t: TestApp
let org: TestOrg
const path = (key: string) => `/v1/memories/${encodeURIComponent(key)}`

beforeAll(async () => {
  t = await testApp()
  org = await createOrg()
})

describe('write and read', () => {
  test('PUT then GET returns the value, a version and the same ETag', async () => {
    const put = await t.request('PUT', path('notes/today'), { key: org.key, body: { value: { todo: ['a', 'b'], n: 1 }, metadata: { source: 'test' } } })
    const written = expectOk(put)
    expect(written).toMatchObject({ key: 'notes/today', value: { todo: ['a', 'b'], n: 1 }, metadata: { source: 'test' }, expires_at: null })
    expect(put.headers.get('etag')).toBe(`"${written.version}"`)
    const got = await t.request('GET', path('notes/today'), { key: org.key })
    expect(expectOk(got)).toEqual(written)
    expect(got.headers.get('etag')).toBe(`"${written.version}"`)
  })

  test('any JSON value: null, a string, a number, an array', async () => {
    for (const value of [null, 'text', 42.5, [1, { a: null }], false]) {
      expectOk(await t.request('PUT', path('any'), { key: org.key, body: { value } }))
      expect(expectOk(await t.request('GET', path('any'), { key: org.key })).value).toEqual(value)
    }
  })

  test('every write raises the version; versions are not reused after a delete', async () => {
    const a = expectOk(await t.request('PUT', path('v'), { key: org.key, body: { value: 1 } })).version
    const b = expectOk(await t.request('PUT', path('v'), { key: org.key, body: { value: 2 } })).version
    expect(b).toBeGreaterThan(a)
    expectOk(await t.request('DELETE', path('v'), { key: org.key }))
    const c = expectOk(await t.request('PUT', path('v'), { key: org.key, body: { value: 3 } })).version
    expect(c).toBeGreaterThan(b)
  })

  test('a missing key is 404; a deleted key is gone', async () => {
    expectError(await t.request('GET', path('never'), { key: org.key }), 404, 'not_found')
    expectOk(await t.request('PUT', path('gone'), { key: org.key, body: { value: 1 } }))
    expect(expectOk(await t.request('DELETE', path('gone'), { key: org.key }))).toMatchObject({ key: 'gone', deleted: true })
    expectError(await t.request('GET', path('gone'), { key: org.key }), 404, 'not_found')
    expectError(await t.request('DELETE', path('gone'), { key: org.key }), 404, 'not_found')
  })

  test('bad keys and bodies are validation errors naming the field', async () => {
    expectError(await t.request('PUT', path('x'.repeat(513)), { key: org.key, body: { value: 1 } }), 400, 'validation_error', /^key: /)
    expectError(await t.request('PUT', path('é'.repeat(257)), { key: org.key, body: { value: 1 } }), 400, 'validation_error', /^key: .*bytes/)
    expectError(await t.request('PUT', path('tab\there'), { key: org.key, body: { value: 1 } }), 400, 'validation_error', /^key: .*control/)
    expectError(await t.request('PUT', path('k'), { key: org.key, body: {} }), 400, 'validation_error', /^value: /)
    expectError(await t.request('PUT', path('k'), { key: org.key, body: { value: 1, ttl_seconds: 0 } }), 400, 'validation_error', /ttl_seconds/)
    expectError(await t.request('PUT', path('k'), { key: org.key, body: { value: 'x'.repeat(256 * 1024) } }), 400, 'validation_error', /^value: .*256 KB/)
    expectError(await t.request('PUT', path('k'), { key: org.key, body: { value: 1, metadata: 'no' } }), 400, 'validation_error', /metadata/)
    expectError(await t.request('PUT', path('k'), { key: org.key, body: { value: 1 }, headers: { 'if-match': 'abc' } }), 400, 'validation_error', /^If-Match: /)
    expectError(
      await t.request('PUT', path('k'), { key: org.key, body: { value: 1 }, headers: { 'if-none-match': '"3"' } }),
      400,
      'validation_error',
      /^If-None-Match: /,
    )
    expectError(await t.request('GET', path('k'), {}), 401, 'unauthorized')
  })
})

describe('optimistic concurrency', () => {
  test('If-Match with the current version wins; a stale one is 412 naming the current version', async () => {
    const v1 = expectOk(await t.request('PUT', path('cas'), { key: org.key, body: { value: 1 } })).version
    const v2 = expectOk(await t.request('PUT', path('cas'), { key: org.key, body: { value: 2 }, headers: { 'if-match': `"${v1}"` } })).version
    const stale = await t.request('PUT', path('cas'), { key: org.key, body: { value: 3 }, headers: { 'if-match': `"${v1}"` } })
    expectError(stale, 412, 'precondition_failed', new RegExp(`is at version ${v2}, expected version ${v1}`))
    expect(stale.body.error.details).toEqual({ key: 'cas', current_version: v2 })
    expect(expectOk(await t.request('GET', path('cas'), { key: org.key })).value).toBe(2)
  })

  test('two writers with the same If-Match: exactly one wins', async () => {
    const v = expectOk(await t.request('PUT', path('race'), { key: org.key, body: { value: 0 } })).version
    const attempts = await Promise.all(
      Array.from({ length: 8 }, (_, i) => t.request('PUT', path('race'), { key: org.key, body: { value: i + 1 }, headers: { 'if-match': `"${v}"` } })),
    )
    const won = attempts.filter(r => r.status === 200)
    expect(won).toHaveLength(1)
    for (const lost of attempts.filter(r => r.status !== 200)) expectError(lost, 412, 'precondition_failed')
    expect(expectOk(await t.request('GET', path('race'), { key: org.key })).value).toBe(won[0]!.body.data.value)
  })

  test('If-None-Match: * creates only once', async () => {
    const results = await Promise.all(
      [1, 2, 3].map(value => t.request('PUT', path('once'), { key: org.key, body: { value }, headers: { 'if-none-match': '*' } })),
    )
    expect(results.filter(r => r.status === 200)).toHaveLength(1)
    for (const r of results.filter(r => r.status !== 200)) expectError(r, 412, 'precondition_failed', /^If-None-Match: /)
  })

  test('If-Match: * needs the key to exist; DELETE honours If-Match', async () => {
    expectError(await t.request('PUT', path('absent'), { key: org.key, body: { value: 1 }, headers: { 'if-match': '*' } }), 412, 'precondition_failed')
    const v = expectOk(await t.request('PUT', path('del'), { key: org.key, body: { value: 1 } })).version
    expectError(await t.request('DELETE', path('del'), { key: org.key, headers: { 'if-match': `"${v + 1000}"` } }), 412, 'precondition_failed')
    expectOk(await t.request('DELETE', path('del'), { key: org.key, headers: { 'if-match': `"${v}"` } }))
  })
})

describe('merge patch (RFC 7386)', () => {
  test('merges members, null removes, arrays replace; metadata and expiry stay', async () => {
    const before = expectOk(
      await t.request('PUT', path('doc'), { key: org.key, body: { value: { a: 1, b: { c: 2, d: 3 }, list: [1, 2] }, metadata: { m: 1 }, ttl_seconds: 3600 } }),
    )
    const res = await t.request('PATCH', path('doc'), {
      key: org.key,
      body: { b: { c: null, e: 5 }, list: [9], z: 'new' },
      headers: { 'content-type': 'application/merge-patch+json' },
    })
    const after = expectOk(res)
    expect(after.value).toEqual({ a: 1, b: { d: 3, e: 5 }, list: [9], z: 'new' })
    expect(after.metadata).toEqual({ m: 1 })
    expect(after.expires_at).toBe(before.expires_at)
    expect(after.version).toBeGreaterThan(before.version)
    expect(res.headers.get('etag')).toBe(`"${after.version}"`)
  })

  test('a non-object patch replaces the value; a "__proto__" member stays data', async () => {
    expectOk(await t.request('PUT', path('doc2'), { key: org.key, body: { value: { a: 1 } } }))
    expect(expectOk(await t.request('PATCH', path('doc2'), { key: org.key, body: '{"__proto__": {"polluted": true}}' })).value).toEqual(
      JSON.parse('{"a":1,"__proto__":{"polluted":true}}'),
    )
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(expectOk(await t.request('PATCH', path('doc2'), { key: org.key, body: [1, 2] })).value).toEqual([1, 2])
  })

  test('PATCH of a missing key is 404; a stale If-Match is 412', async () => {
    expectError(await t.request('PATCH', path('nope'), { key: org.key, body: { a: 1 } }), 404, 'not_found')
    const v = expectOk(await t.request('PUT', path('doc3'), { key: org.key, body: { value: {} } })).version
    expectError(await t.request('PATCH', path('doc3'), { key: org.key, body: { a: 1 }, headers: { 'if-match': `"${v - 1}"` } }), 412, 'precondition_failed')
  })
})

describe('list', () => {
  test('keys in byte order under a prefix, paged by cursor, values on request', async () => {
    const own = await createOrg()
    for (const k of ['p/b', 'p/a', 'p/c', 'p/%_', 'q/a', 'p/B']) expectOk(await t.request('PUT', path(k), { key: own.key, body: { value: k } }))
    const first = await t.request('GET', '/v1/memories?prefix=p/&limit=2', { key: own.key })
    expect(expectOk(first).map((m: { key: string }) => m.key)).toEqual(['p/%_', 'p/B'])
    expect(first.body.meta).toMatchObject({ total: 5, limit: 2 })
    expect(first.body.data[0].value).toBeUndefined()
    const second = await t.request('GET', `/v1/memories?prefix=p/&limit=2&include_values=true&cursor=${first.body.meta.cursor}`, { key: own.key })
    expect(expectOk(second).map((m: { key: string; value: string }) => [m.key, m.value])).toEqual([
      ['p/a', 'p/a'],
      ['p/b', 'p/b'],
    ])
    const third = await t.request('GET', `/v1/memories?prefix=p/&limit=2&cursor=${second.body.meta.cursor}`, { key: own.key })
    expect(expectOk(third).map((m: { key: string }) => m.key)).toEqual(['p/c'])
    expect(third.body.meta.cursor).toBeNull()
    // the wildcard characters of LIKE are plain characters in a prefix
    expect(expectOk(await t.request('GET', `/v1/memories?prefix=${encodeURIComponent('p/%')}`, { key: own.key })).map((m: { key: string }) => m.key)).toEqual([
      'p/%_',
    ])
    expectError(await t.request('GET', `/v1/memories?prefix=q/&cursor=${first.body.meta.cursor}`, { key: own.key }), 400, 'validation_error', /^cursor: /)
  })
})

describe('batch', () => {
  test('checks, sets and deletes apply together', async () => {
    const v = expectOk(await t.request('PUT', path('b/1'), { key: org.key, body: { value: 1 } })).version
    const res = expectOk(
      await t.request('POST', '/v1/memories/batch', {
        key: org.key,
        body: {
          operations: [
            { op: 'check', key: 'b/1', version: v },
            { op: 'set', key: 'b/2', value: { x: 1 } },
            { op: 'delete', key: 'b/1' },
            { op: 'check', key: 'b/3', exists: false },
          ],
        },
      }),
    )
    expect(res.results.map((r: { op: string }) => r.op)).toEqual(['check', 'set', 'delete', 'check'])
    expect(res.results[1].version).toBeGreaterThan(v)
    expectError(await t.request('GET', path('b/1'), { key: org.key }), 404, 'not_found')
    expect(expectOk(await t.request('GET', path('b/2'), { key: org.key })).value).toEqual({ x: 1 })
  })

  test('a failing check changes nothing', async () => {
    const v = expectOk(await t.request('PUT', path('c/1'), { key: org.key, body: { value: 'kept' } })).version
    const res = await t.request('POST', '/v1/memories/batch', {
      key: org.key,
      body: {
        operations: [
          { op: 'set', key: 'c/1', value: 'lost' },
          { op: 'set', key: 'c/new', value: 1 },
          { op: 'check', key: 'c/1', version: v },
        ],
      },
    })
    expectError(res, 412, 'precondition_failed', /^operations\[2\]: /)
    expect(expectOk(await t.request('GET', path('c/1'), { key: org.key }))).toMatchObject({ value: 'kept', version: v })
    expectError(await t.request('GET', path('c/new'), { key: org.key }), 404, 'not_found')
  })

  test('more than 25 operations, or a bad one, is refused', async () => {
    const ops = Array.from({ length: 26 }, (_, i) => ({ op: 'set', key: `k${i}`, value: i }))
    expectError(await t.request('POST', '/v1/memories/batch', { key: org.key, body: { operations: ops } }), 400, 'validation_error')
    expectError(
      await t.request('POST', '/v1/memories/batch', {
        key: org.key,
        body: {
          operations: [
            { op: 'set', key: 'ok', value: 1 },
            { op: 'set', key: 'a\u0000', value: 1 },
          ],
        },
      }),
      400,
      'validation_error',
      /^operations\[1\]\.key: /,
    )
    expectError(await t.request('GET', path('ok'), { key: org.key }), 404, 'not_found')
  })
})

describe('expiry', () => {
  test('an expired key vanishes from reads at once and the cleanup job removes it', async () => {
    const own = await createOrg()
    expectOk(await t.request('PUT', path('short'), { key: own.key, body: { value: 1, ttl_seconds: 60 } }))
    expectOk(await t.request('PUT', path('long'), { key: own.key, body: { value: 2, ttl_seconds: 3600 } }))
    const sql = await testSql()
    // the clock moves for this key only: its expiry is put in the past
    await sql`update memories set expires_at = now() - interval '1 second' where org_id = ${own.orgId} and key = 'short'`
    expectError(await t.request('GET', path('short'), { key: own.key }), 404, 'not_found')
    expect(expectOk(await t.request('GET', '/v1/memories', { key: own.key })).map((m: { key: string }) => m.key)).toEqual(['long'])
    // an expired key can be created again with If-None-Match: *
    expectOk(await t.request('PUT', path('short'), { key: own.key, body: { value: 3, ttl_seconds: 60 }, headers: { 'if-none-match': '*' } }))
    await sql`update memories set expires_at = now() - interval '1 second' where org_id = ${own.orgId} and key = 'short'`
    expect(await deleteExpiredMemories(t.ctx)).toBeGreaterThanOrEqual(1)
    const [row] = await sql`select count(*)::int as n from memories where org_id = ${own.orgId}`
    expect(row!.n).toBe(1)
    const [usage] = await sql`select keys::int, bytes::int from memory_usage where org_id = ${own.orgId}`
    expect(usage!.keys).toBe(1)
  })
})

describe('quotas', () => {
  test('limits are shown in GET /v1/account and enforced exactly', async () => {
    const free = await createOrg({ plan: 'free' })
    const limits = expectOk(await t.request('GET', '/v1/account', { key: free.key })).limits
    expect(limits).toMatchObject({ memory_keys_max: 1000, memory_storage_mb: 10, memory_value_max_kb: 256 })
    const sql = await testSql()
    // one key below the cap, set directly, then writers race for the last slot
    await sql`insert into memory_usage (org_id, keys, bytes) values (${free.orgId}, 999, 0)`
    const results = await Promise.all([1, 2, 3].map(i => t.request('PUT', path(`q${i}`), { key: free.key, body: { value: i } })))
    expect(results.filter(r => r.status === 200)).toHaveLength(1)
    for (const r of results.filter(r => r.status !== 200)) expectError(r, 403, 'quota_exceeded', /1000 keys/)
    // an update of an existing key and a delete still work at the cap
    const kept = results.find(r => r.status === 200)!.body.data.key
    expectOk(await t.request('PUT', path(kept), { key: free.key, body: { value: 'again' } }))
    expectOk(await t.request('DELETE', path(kept), { key: free.key }))
  })
})

describe('boundaries', () => {
  test("another organization's keys are invisible (404) and untouched", async () => {
    const other = await createOrg()
    expectOk(await t.request('PUT', path('private'), { key: org.key, body: { value: 'mine' } }))
    expectError(await t.request('GET', path('private'), { key: other.key }), 404, 'not_found')
    expectError(await t.request('DELETE', path('private'), { key: other.key }), 404, 'not_found')
    expectError(await t.request('PATCH', path('private'), { key: other.key, body: { a: 1 } }), 404, 'not_found')
    expectError(await t.request('POST', '/v1/memories/batch', { key: other.key, body: { operations: [{ op: 'delete', key: 'private' }] } }), 404, 'not_found')
    expectOk(await t.request('PUT', path('private'), { key: other.key, body: { value: 'theirs' } }))
    expect(expectOk(await t.request('GET', path('private'), { key: org.key })).value).toBe('mine')
    expect(expectOk(await t.request('GET', '/v1/memories?prefix=private', { key: other.key })).map((m: { value?: unknown; key: string }) => m.key)).toEqual([
      'private',
    ])
  })

  test('a connection key may not call any memory route (403)', async () => {
    const bound = await managedAddress(t.ctx, org.orgId)
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address: bound } }), 201)
    const conn = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    for (const [method, p, body] of [
      ['GET', path('private')],
      ['PUT', path('x'), { value: 1 }],
      ['PATCH', path('x'), { a: 1 }],
      ['DELETE', path('x')],
      ['GET', '/v1/memories'],
      ['POST', '/v1/memories/batch', { operations: [{ op: 'check', key: 'x' }] }],
    ] as [string, string, unknown?][]) {
      expectError(await t.request(method, p, { key: conn, body }), 403, 'forbidden')
    }
  })
})
