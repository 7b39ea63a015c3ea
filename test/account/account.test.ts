/** Identity, account and storage reads, and the deprecated /v1/me alias. */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'
import { expectOk } from '../helpers/envelope'

const { ctx, request } = await testApp()

describe('GET /v1/whoami', () => {
  test('exactly the identity fields', async () => {
    const org = await createOrg({ role: 'owner' })
    const res = await request('GET', '/v1/whoami', { key: org.key })
    expect(expectOk(res)).toEqual({
      org_id: org.orgId,
      user_id: org.userId,
      role: 'owner',
      request_id: res.headers.get('x-request-id')!,
      auth_method: 'api_key',
      key_id: org.keyId,
    })
  })

  test("role is the key creator's current role", async () => {
    const org = await createOrg({ role: 'member' })
    expect(expectOk(await request('GET', '/v1/whoami', { key: org.key })).role).toBe('member')
    const admin = await createOrg({ role: 'admin' })
    expect(expectOk(await request('GET', '/v1/whoami', { key: admin.key })).role).toBe('admin')
  })
})

describe('GET /v1/me (deprecated alias)', () => {
  test('answers like whoami, with Deprecation and Link headers', async () => {
    const org = await createOrg()
    const res = await request('GET', '/v1/me', { key: org.key })
    const data = expectOk(res)
    expect(data).toEqual({ ...expectOk(await request('GET', '/v1/whoami', { key: org.key })), request_id: res.headers.get('x-request-id')! })
    const deprecation = res.headers.get('deprecation')!
    expect(deprecation).toMatch(/^@\d+$/)
    expect(Number(deprecation.slice(1)) * 1000).toBeLessThan(Date.now() + 366 * 86_400_000)
    expect(res.headers.get('link')).toMatch(/^<https?:\/\/[^>]+>;\s*rel="deprecation"/)
    // no removal date is set, so no Sunset header
    expect(res.headers.get('sunset')).toBeNull()
  })

  test('whoami itself is not deprecated', async () => {
    const org = await createOrg()
    const res = await request('GET', '/v1/whoami', { key: org.key })
    expect(res.headers.get('deprecation')).toBeNull()
    expect(res.headers.get('link')).toBeNull()
  })

  test('the OpenAPI operation is marked deprecated and names the replacement', async () => {
    const doc = (await request('GET', '/v1/openapi')).body
    expect(doc.paths['/v1/me'].get.deprecated).toBe(true)
    expect(doc.paths['/v1/me'].get.description).toContain('/v1/whoami')
    expect(doc.paths['/v1/whoami'].get.deprecated).toBeUndefined()
  })
})

describe('GET /v1/account', () => {
  const LIMIT_FIELDS = [
    'api_per_minute',
    'filters_per_domain',
    'memory_keys_max',
    'memory_storage_mb',
    'memory_value_max_kb',
    'send_per_day',
    'send_per_hour',
    'spam_thresholds_per_domain',
    'storage_mb',
    'wake_min_interval_minutes',
    'wakes_active_max',
    'webhooks_max_global',
    'webhooks_per_domain',
  ]

  test('free plan', async () => {
    const org = await createOrg({ plan: 'free' })
    const data = expectOk(await request('GET', '/v1/account', { key: org.key }))
    expect(Object.keys(data).sort()).toEqual(['entitlements', 'limits', 'plan'])
    expect(Object.keys(data.limits).sort()).toEqual(LIMIT_FIELDS)
    expect(data).toEqual({
      plan: 'free',
      entitlements: [],
      limits: {
        storage_mb: 100,
        send_per_hour: 1000,
        send_per_day: 10000,
        api_per_minute: 120,
        webhooks_max_global: 1,
        webhooks_per_domain: false,
        filters_per_domain: false,
        spam_thresholds_per_domain: false,
        memory_keys_max: 1000,
        memory_storage_mb: 10,
        memory_value_max_kb: 256,
        wakes_active_max: 10,
        wake_min_interval_minutes: 1,
      },
    })
  })

  test('agent plan', async () => {
    const org = await createOrg({ plan: 'agent' })
    const data = expectOk(await request('GET', '/v1/account', { key: org.key }))
    expect(data.plan).toBe('agent')
    expect(data.limits).toEqual({
      storage_mb: 100,
      send_per_hour: 1000,
      send_per_day: 10000,
      api_per_minute: 120,
      webhooks_max_global: 1,
      webhooks_per_domain: false,
      filters_per_domain: false,
      spam_thresholds_per_domain: false,
      memory_keys_max: 1000,
      memory_storage_mb: 10,
      memory_value_max_kb: 256,
      wakes_active_max: 10,
      wake_min_interval_minutes: 1,
    })
  })

  test('developer plan', async () => {
    const org = await createOrg({ plan: 'developer' })
    const data = expectOk(await request('GET', '/v1/account', { key: org.key }))
    expect(data.plan).toBe('developer')
    expect(data.entitlements).toEqual(expect.arrayContaining(['webhooks_per_domain', 'filters_per_domain', 'spam_thresholds_per_domain']))
    expect(data.entitlements).not.toContain('x402_payments')
    expect(data.limits).toEqual({
      storage_mb: 5120,
      send_per_hour: 1000,
      send_per_day: 10000,
      api_per_minute: 3000,
      webhooks_max_global: null,
      webhooks_per_domain: true,
      filters_per_domain: true,
      spam_thresholds_per_domain: true,
      memory_keys_max: 100000,
      memory_storage_mb: 1024,
      memory_value_max_kb: 256,
      wakes_active_max: 100,
      wake_min_interval_minutes: 1,
    })
  })

  test('an extra entitlement granted by an operator is listed and drives its flag', async () => {
    const org = await createOrg({ plan: 'free' })
    await ctx.sql`update orgs set extra_entitlements = array['filters_per_domain', 'x402_payments'] where id = ${org.orgId}`
    const data = expectOk(await request('GET', '/v1/account', { key: org.key }))
    expect(data.entitlements).toEqual(['filters_per_domain', 'x402_payments'])
    expect(data.limits.filters_per_domain).toBe(true)
    expect(data.limits.webhooks_per_domain).toBe(false)
  })
})

describe('GET /v1/account/storage', () => {
  const FIELDS = ['emails_count', 'included_mb', 'limit_mb', 'overage_mb', 'percentage', 'quota_mb', 'used_bytes', 'used_kb', 'used_mb']
  const MB = 1024 * 1024

  async function storage(plan: 'free' | 'developer', usedBytes: number, emails: number) {
    const org = await createOrg({ plan })
    await ctx.sql`update orgs set storage_used_bytes = ${usedBytes}, emails_count = ${emails} where id = ${org.orgId}`
    const data = expectOk(await request('GET', '/v1/account/storage', { key: org.key }))
    expect(Object.keys(data).sort()).toEqual(FIELDS)
    return data
  }

  test('an empty free account', async () => {
    expect(await storage('free', 0, 0)).toEqual({
      used_bytes: 0,
      used_kb: 0,
      used_mb: 0,
      included_mb: 100,
      limit_mb: 100,
      overage_mb: 0,
      quota_mb: 100,
      percentage: 0,
      emails_count: 0,
    })
  })

  test('free plan under its allowance', async () => {
    expect(await storage('free', 25 * MB + 512 * 1024, 7)).toEqual({
      used_bytes: 25 * MB + 512 * 1024,
      used_kb: 25 * 1024 + 512,
      used_mb: 25.5,
      included_mb: 100,
      limit_mb: 100,
      overage_mb: 0,
      quota_mb: 100,
      percentage: 25.5,
      emails_count: 7,
    })
  })

  test('free plan past its allowance: overage and a percentage above 100', async () => {
    const data = await storage('free', 150 * MB, 3)
    expect(data).toMatchObject({ used_mb: 150, included_mb: 100, limit_mb: 100, overage_mb: 50, quota_mb: 100, percentage: 150 })
  })

  test('rounding to two decimals', async () => {
    const data = await storage('free', 1_234_567, 1)
    expect(data.used_bytes).toBe(1_234_567)
    expect(data.used_kb).toBe(1205.63)
    expect(data.used_mb).toBe(1.18)
    expect(data.percentage).toBe(1.18)
  })

  test('paid plan: no limit, billed overage, beyond 2^32 bytes', async () => {
    const used = 6 * 1024 * MB // 6 GiB
    expect(await storage('developer', used, 123456)).toEqual({
      used_bytes: used,
      used_kb: 6 * 1024 * 1024,
      used_mb: 6144,
      included_mb: 5120,
      limit_mb: null,
      overage_mb: 1024,
      quota_mb: 5120,
      percentage: 120,
      emails_count: 123456,
    })
  })
})
