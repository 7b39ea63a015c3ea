/** Sender filters: create (patterns, per-domain gating), list, read, enable/disable only, delete. */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { claimDomain, randomId, webhookResolver } from './crud-helpers'

const app = await testApp({}, { resolver: webhookResolver() })
const { ctx, request } = app

async function create(key: string, body: Record<string, unknown>) {
  return expectOk(await request('POST', '/v1/filters', { key, body }), 201)
}

describe('create', () => {
  test('201, enabled, org-wide; the pattern trimmed and lowercased', async () => {
    const org = await createOrg()
    const f = await create(org.key, { type: 'blocklist', pattern: '  *@Spam.EXAMPLE  ' })
    expect(f).toEqual({ id: expect.any(String), type: 'blocklist', pattern: '*@spam.example', domain_id: null, enabled: true, created_at: expect.any(String) })
    expect(expectOk(await request('GET', `/v1/filters/${f.id}`, { key: org.key }))).toEqual(f)
    const w = await create(org.key, { type: 'whitelist', pattern: '@partner.example', domain_id: null })
    expect(w).toMatchObject({ type: 'whitelist', pattern: '@partner.example', domain_id: null })
  })

  test('every form of the pattern language is accepted', async () => {
    const org = await createOrg()
    for (const pattern of [
      'boss@example.com',
      '@example.com',
      '*@example.com',
      'billing-*@*',
      '*@*.example.com',
      '*',
      'a*b@c*d.example',
      'o+tag@example.com',
    ]) {
      expect((await create(org.key, { type: 'whitelist', pattern })).pattern).toBe(pattern)
    }
  })

  test('a per-domain filter on a paid plan', async () => {
    const org = await createOrg({ plan: 'developer' })
    const domain = await claimDomain(app, org.key)
    expect((await create(org.key, { type: 'blocklist', pattern: '*@spam.example', domain_id: domain.id })).domain_id).toBe(domain.id)
  })

  test('per-domain filters need filters_per_domain: 403 feature_disabled on the free and agent plans', async () => {
    for (const plan of ['free', 'agent'] as const) {
      const org = await createOrg({ plan })
      const domain = await claimDomain(app, org.key)
      const res = await request('POST', '/v1/filters', { key: org.key, body: { type: 'blocklist', pattern: '*@spam.example', domain_id: domain.id } })
      expectError(res, 403, 'feature_disabled', /^domain_id: per-domain filters are not included in the (free|agent) plan/)
      expect(res.body.error.details).toMatchObject({ missing_entitlement: 'filters_per_domain' })
      // org-wide filters are fine on every plan
      await create(org.key, { type: 'blocklist', pattern: '*@spam.example' })
    }
  })

  test('a domain of another organization, or none at all, is 404', async () => {
    const org = await createOrg()
    const other = await createOrg()
    const theirs = await claimDomain(app, other.key)
    for (const domain_id of [theirs.id, randomId()]) {
      expectError(
        await request('POST', '/v1/filters', { key: org.key, body: { type: 'whitelist', pattern: '@x.example', domain_id } }),
        404,
        'not_found',
        'domain: not found',
      )
    }
  })

  test('each invalid field is a validation_error naming it', async () => {
    const org = await createOrg()
    const cases: [Record<string, unknown>, string | RegExp][] = [
      [{ pattern: '@example.com' }, 'type: is required'],
      [{ type: 'allow', pattern: '@example.com' }, 'type: must be one of whitelist, blocklist'],
      [{ type: 'whitelist' }, 'pattern: is required'],
      [{ type: 'whitelist', pattern: '' }, 'pattern: must not be empty'],
      [{ type: 'whitelist', pattern: '   ' }, 'pattern: must not be empty'],
      [{ type: 'whitelist', pattern: `${'a'.repeat(490)}@example.com` }, 'pattern: must be at most 500 characters'],
      [{ type: 'whitelist', pattern: 'example.com' }, /^pattern: must be an address, an @domain, or a pattern with \*/],
      [{ type: 'whitelist', pattern: 'a@b@example.com' }, 'pattern: must contain at most one @'],
      [{ type: 'whitelist', pattern: 'boss @example.com' }, 'pattern: must not contain spaces'],
      [{ type: 'whitelist', pattern: 'boss@' }, 'pattern: must have a domain (or *) after the @'],
      [{ type: 'whitelist', pattern: '@' }, 'pattern: must have a domain (or *) after the @'],
      [{ type: 'whitelist', pattern: 'a@.example.com' }, 'pattern: must have a well-formed domain after the @'],
      [{ type: 'whitelist', pattern: 'a\u0000@example.com' }, 'pattern: must not contain NUL (\\u0000) characters'],
      [{ type: 'whitelist', pattern: 'a\u0007@example.com' }, 'pattern: must not contain control characters'],
      [{ type: 'whitelist', pattern: 42 }, 'pattern: must be a string'],
      [{ type: 'whitelist', pattern: '@example.com', domain_id: 'example.com' }, 'domain_id: must be a domain id (uuid) or null'],
      [{ type: 'whitelist', pattern: '@example.com', enabled: false }, 'enabled: is not a known field'],
    ]
    for (const [body, message] of cases) expectError(await request('POST', '/v1/filters', { key: org.key, body }), 400, 'validation_error', message)
    expect(expectOk(await request('GET', '/v1/filters', { key: org.key }))).toEqual([])
  })
})

describe('list', () => {
  test('newest first, paginated, disabled filters included', async () => {
    const org = await createOrg()
    const made = []
    for (let i = 0; i < 3; i++) made.push(await create(org.key, { type: 'blocklist', pattern: `s${i}@spam.example` }))
    expectOk(await request('PATCH', `/v1/filters/${made[1].id}`, { key: org.key, body: { enabled: false } }))
    const first = await request('GET', '/v1/filters?limit=2', { key: org.key })
    expect(expectOk(first).map((f: any) => f.id)).toEqual([made[2].id, made[1].id])
    const { cursor, total } = first.body.meta
    expect(total).toBe(3)
    const second = await request('GET', `/v1/filters?limit=2&cursor=${cursor}`, { key: org.key })
    expect(expectOk(second).map((f: any) => f.id)).toEqual([made[0].id])
    expect(second.body.meta.cursor).toBeNull()
  })
})

describe('update', () => {
  test('enabled is the only patchable field', async () => {
    const org = await createOrg()
    const f = await create(org.key, { type: 'blocklist', pattern: '*@spam.example' })
    expect(expectOk(await request('PATCH', `/v1/filters/${f.id}`, { key: org.key, body: { enabled: false } }))).toEqual({ ...f, enabled: false })
    expect(expectOk(await request('PATCH', `/v1/filters/${f.id}`, { key: org.key, body: { enabled: true } }))).toEqual(f)
    const cases: [unknown, string][] = [
      [{ pattern: '*@other.example' }, 'enabled: is required; pattern: is not a known field'],
      [{ type: 'whitelist' }, 'enabled: is required; type: is not a known field'],
      [{ domain_id: null }, 'enabled: is required; domain_id: is not a known field'],
      [{ enabled: false, pattern: '*@other.example' }, 'pattern: is not a known field'],
      [{}, 'enabled: is required'],
      [{ enabled: 'no' }, 'enabled: must be a boolean'],
    ]
    for (const [body, message] of cases) expectError(await request('PATCH', `/v1/filters/${f.id}`, { key: org.key, body }), 400, 'validation_error', message)
    expect(expectOk(await request('GET', `/v1/filters/${f.id}`, { key: org.key }))).toEqual(f)
  })
})

describe('delete', () => {
  test('200 {id, deleted: true}; the filter is gone', async () => {
    const org = await createOrg()
    const f = await create(org.key, { type: 'blocklist', pattern: '*@spam.example' })
    expect(expectOk(await request('DELETE', `/v1/filters/${f.id}`, { key: org.key }))).toEqual({ id: f.id, deleted: true })
    expectError(await request('GET', `/v1/filters/${f.id}`, { key: org.key }), 404, 'not_found', 'filter: not found')
    expectError(await request('DELETE', `/v1/filters/${f.id}`, { key: org.key }), 404, 'not_found', 'filter: not found')
    expect(await ctx.sql`select 1 from filters where id = ${f.id}`).toHaveLength(0)
  })
})

describe('another organization', () => {
  test('its filters are 404 for read, update and delete, and absent from the list', async () => {
    const owner = await createOrg()
    const intruder = await createOrg()
    const f = await create(owner.key, { type: 'blocklist', pattern: '*@spam.example' })
    expectError(await request('GET', `/v1/filters/${f.id}`, { key: intruder.key }), 404, 'not_found')
    expectError(await request('PATCH', `/v1/filters/${f.id}`, { key: intruder.key, body: { enabled: false } }), 404, 'not_found')
    expectError(await request('DELETE', `/v1/filters/${f.id}`, { key: intruder.key }), 404, 'not_found')
    expect(expectOk(await request('GET', '/v1/filters', { key: intruder.key }))).toEqual([])
    expect(expectOk(await request('GET', `/v1/filters/${f.id}`, { key: owner.key }))).toEqual(f)
  })

  test('malformed ids are 400; no credential is 401', async () => {
    const org = await createOrg()
    expectError(await request('GET', '/v1/filters/nope', { key: org.key }), 400, 'validation_error', /^id: /)
    expectError(await request('POST', '/v1/filters', { body: { type: 'blocklist', pattern: '*' } }), 401, 'unauthorized')
  })
})
