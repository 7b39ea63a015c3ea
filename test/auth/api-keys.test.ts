/** API keys: creation (secret shown once), pagination, cursors and the created_after filter. */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { cursors } from '../../src/http/pagination'

const { ctx, request } = await testApp()

describe('create', () => {
  test('201 with a svc_ key shown once, no-store, and the key works', async () => {
    const org = await createOrg()
    const res = await request('POST', '/v1/api-keys', { key: org.key, body: { name: 'ci' } })
    const created = expectOk(res, 201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(created.key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/)
    expect(created).toMatchObject({ name: 'ci', created_by: org.userId, revoked_at: null })
    expect(created.hint).toBe(created.key.slice(0, 10))
    expect(Math.abs(Date.parse(created.created_at) - Date.now())).toBeLessThan(60_000)

    const me = expectOk(await request('GET', '/v1/whoami', { key: created.key }))
    expect(me).toMatchObject({ org_id: org.orgId, user_id: org.userId, key_id: created.id })

    // listings never show the secret
    const listed = expectOk(await request('GET', '/v1/api-keys', { key: org.key }))
    expect(listed.find((k: { id: string }) => k.id === created.id)).not.toHaveProperty('key')
    expect(JSON.stringify(listed)).not.toContain(created.key)
  })

  test('the secret is stored only as a hash', async () => {
    const org = await createOrg()
    const created = expectOk(await request('POST', '/v1/api-keys', { key: org.key, body: { name: 'x' } }), 201)
    const [row] = await ctx.sql`select * from api_keys where id = ${created.id}`
    expect(JSON.stringify(row)).not.toContain(created.key.slice(10))
  })

  test('a name longer than 100 characters is rejected', async () => {
    const org = await createOrg()
    expectError(
      await request('POST', '/v1/api-keys', { key: org.key, body: { name: 'n'.repeat(101) } }),
      400,
      'validation_error',
      'name: must be at most 100 characters',
    )
  })
})

describe('list pagination', () => {
  const org = createOrg()

  test('limit=1 walks every key once via meta.cursor, newest first', async () => {
    const { key, keyId } = await org
    const made: string[] = [keyId]
    for (const name of ['b', 'c', 'd', 'e']) made.push(expectOk(await request('POST', '/v1/api-keys', { key, body: { name } }), 201).id)

    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const qs: string = cursor ? `limit=1&cursor=${encodeURIComponent(cursor)}` : 'limit=1'
      const res = await request('GET', `/v1/api-keys?${qs}`, { key })
      const data = expectOk(res)
      expect(data).toHaveLength(1)
      expect(res.body.meta.total).toBe(5)
      expect(res.body.meta.limit).toBe(1)
      seen.push(data[0].id)
      cursor = res.body.meta.cursor
      expect(pages++).toBeLessThan(10)
    } while (cursor !== null)

    expect(pages).toBe(5)
    expect(seen).toEqual([...made].reverse())
  })

  test('a page of exactly the remaining rows has cursor null', async () => {
    const { key } = await org
    const res = await request('GET', '/v1/api-keys?limit=5', { key })
    expect(expectOk(res)).toHaveLength(5)
    expect(res.body.meta).toEqual({ total: 5, limit: 5, cursor: null })
  })

  test('limit defaults to 50', async () => {
    const { key } = await org
    expect((await request('GET', '/v1/api-keys', { key })).body.meta.limit).toBe(50)
  })
})

describe('cursors are opaque and bound to their list', () => {
  const org = createOrg()
  async function firstCursor(key: string): Promise<string> {
    await request('POST', '/v1/api-keys', { key, body: { name: 'another' } })
    const cursor = (await request('GET', '/v1/api-keys?limit=1', { key })).body.meta.cursor
    expect(typeof cursor).toBe('string')
    return cursor
  }

  test('a tampered cursor', async () => {
    const { key } = await org
    const cursor = await firstCursor(key)
    const [body, sig] = cursor.split('.') as [string, string]
    const forgedId = Buffer.from('ffffffff-ffff-7fff-bfff-ffffffffffff').toString('base64url')
    const flipped = sig.slice(0, -1) + (sig.at(-1) === 'A' ? 'B' : 'A')
    for (const bad of [`${forgedId}.${sig}`, `${body}.${flipped}`, `${body}.`, body, `${body}.${sig}.x`]) {
      expectError(await request('GET', `/v1/api-keys?cursor=${encodeURIComponent(bad)}`, { key }), 400, 'validation_error', /^cursor: /)
    }
  })

  test("another organization's cursor", async () => {
    const { key } = await org
    const other = await createOrg()
    const foreign = await firstCursor(other.key)
    expectError(await request('GET', `/v1/api-keys?cursor=${encodeURIComponent(foreign)}`, { key }), 400, 'validation_error', /^cursor: /)
  })

  test('a cursor signed for another list', async () => {
    const { key, keyId } = await org
    const elsewhere = cursors(ctx).encode('filters', keyId)
    expectError(await request('GET', `/v1/api-keys?cursor=${encodeURIComponent(elsewhere)}`, { key }), 400, 'validation_error', /^cursor: /)
  })

  test('garbage', async () => {
    const { key } = await org
    for (const bad of ['garbage', '', '....', '%00', 'x'.repeat(201)]) {
      expectError(await request('GET', `/v1/api-keys?cursor=${bad}`, { key }), 400, 'validation_error', /^cursor: /)
    }
  })

  test('a cursor given twice (an array) is refused even when both are valid', async () => {
    const { key } = await org
    const cursor = encodeURIComponent(await firstCursor(key))
    expectError(await request('GET', `/v1/api-keys?cursor=a&cursor=b`, { key }), 400, 'validation_error', /^cursor: /)
    expectError(await request('GET', `/v1/api-keys?cursor=${cursor}&cursor=${cursor}`, { key }), 400, 'validation_error', /^cursor: /)
    expectError(await request('GET', `/v1/api-keys?limit=1&limit=2`, { key }), 400, 'validation_error', /^limit: /)
  })
})

describe('created_after', () => {
  const setup = (async () => {
    const org = await createOrg()
    const early = expectOk(await request('POST', '/v1/api-keys', { key: org.key, body: { name: 'early' } }), 201)
    const late = expectOk(await request('POST', '/v1/api-keys', { key: org.key, body: { name: 'late' } }), 201)
    await ctx.sql`update api_keys set created_at = '2026-01-01T00:00:00Z' where id = ${org.keyId}`
    await ctx.sql`update api_keys set created_at = '2026-01-01T10:00:00Z' where id = ${early.id}`
    await ctx.sql`update api_keys set created_at = '2026-01-01T12:00:00Z' where id = ${late.id}`
    return { key: org.key, early: early.id as string, late: late.id as string }
  })()
  const names = async (key: string, after: string) => {
    const res = await request('GET', `/v1/api-keys?created_after=${encodeURIComponent(after)}`, { key })
    const data = expectOk(res)
    expect(res.body.meta.total).toBe(data.length)
    return data.map((k: { name: string }) => k.name)
  }

  test('with Z', async () => {
    const { key } = await setup
    expect(await names(key, '2026-01-01T11:00:00Z')).toEqual(['late'])
    expect(await names(key, '2026-01-01T09:00:00Z')).toEqual(['late', 'early'])
    expect(await names(key, '2026-01-01T12:00:00Z')).toEqual([])
  })

  test('with a numeric offset, converted to UTC', async () => {
    const { key } = await setup
    // 13:00+02:00 is 11:00Z: only the 12:00Z key is after it (13:00Z would match none)
    expect(await names(key, '2026-01-01T13:00:00+02:00')).toEqual(['late'])
    // 09:00-02:00 is 11:00Z (09:00Z would match both)
    expect(await names(key, '2026-01-01T09:00:00-02:00')).toEqual(['late'])
  })

  test('returned timestamps are UTC', async () => {
    const { key, late } = await setup
    const data = expectOk(await request('GET', '/v1/api-keys', { key }))
    expect(data.find((k: { id: string }) => k.id === late).created_at).toBe('2026-01-01T12:00:00.000Z')
  })

  test('compared at the milliseconds shown: a key shown as the instant is not after it, though stored microseconds later', async () => {
    const org = await createOrg()
    const shown = expectOk(await request('POST', '/v1/api-keys', { key: org.key, body: { name: 'shown' } }), 201)
    await ctx.sql`update api_keys set created_at = '2026-01-01T00:00:00Z' where id = ${org.keyId}`
    await ctx.sql`update api_keys set created_at = '2026-01-01T12:00:00.000600Z' where id = ${shown.id}`
    const listed = expectOk(await request('GET', '/v1/api-keys', { key: org.key })).find((k: { id: string }) => k.id === shown.id)
    expect(listed.created_at).toBe('2026-01-01T12:00:00.000Z')
    expect(await names(org.key, listed.created_at)).toEqual([])
    expect(await names(org.key, '2026-01-01T11:59:59.999Z')).toEqual(['shown'])
  })

  test('without a zone, a bare date or garbage: 400 naming created_after', async () => {
    const { key } = await setup
    for (const bad of ['2026-01-01T11:00:00', '2026-01-01', 'tomorrow', '2026-02-30T00:00:00Z']) {
      expectError(await request('GET', `/v1/api-keys?created_after=${encodeURIComponent(bad)}`, { key }), 400, 'validation_error', /^created_after: /)
    }
  })

  test('combines with pagination', async () => {
    const { key } = await setup
    const first = await request('GET', `/v1/api-keys?limit=1&created_after=${encodeURIComponent('2026-01-01T09:00:00Z')}`, { key })
    expect(first.body.meta.total).toBe(2)
    expect(expectOk(first).map((k: { name: string }) => k.name)).toEqual(['late'])
    const second = await request(
      'GET',
      `/v1/api-keys?limit=1&created_after=${encodeURIComponent('2026-01-01T09:00:00Z')}&cursor=${encodeURIComponent(first.body.meta.cursor)}`,
      { key },
    )
    expect(expectOk(second).map((k: { name: string }) => k.name)).toEqual(['early'])
    expect(second.body.meta.cursor).toBeNull()
  })
})
