/** The per-organization webhook signing secret: generated on first read, rotated at most hourly. */
import { describe, expect, test } from 'bun:test'
import { signingSecrets } from '../../src/account/webhook-secret'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'

const { ctx, request } = await testApp()

describe('GET /v1/account/webhook-secret', () => {
  test('generated on first read, the same afterwards, no-store', async () => {
    const org = await createOrg()
    const [before] = await ctx.sql`select count(*)::int as n from webhook_secrets where org_id = ${org.orgId}`
    expect(before!.n).toBe(0)
    const first = await request('GET', '/v1/account/webhook-secret', { key: org.key })
    const { secret } = expectOk(first)
    expect(first.headers.get('cache-control')).toBe('no-store')
    expect(typeof secret).toBe('string')
    expect(secret.length).toBeGreaterThanOrEqual(32)
    const again = await request('GET', '/v1/account/webhook-secret', { key: org.key })
    expect(expectOk(again)).toEqual({ secret })
    expect(again.headers.get('cache-control')).toBe('no-store')
  })

  test('stored sealed, never in clear', async () => {
    const org = await createOrg()
    const { secret } = expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key }))
    const [row] = await ctx.sql`select secret_sealed from webhook_secrets where org_id = ${org.orgId}`
    expect(Buffer.from(row!.secret_sealed).toString('latin1')).not.toContain(secret.slice(6, 20))
  })

  test('two first reads at once agree', async () => {
    const org = await createOrg()
    const [a, b] = await Promise.all([
      request('GET', '/v1/account/webhook-secret', { key: org.key }),
      request('GET', '/v1/account/webhook-secret', { key: org.key }),
    ])
    expect(expectOk(a).secret).toBe(expectOk(b).secret)
  })

  test('another organization has a different secret', async () => {
    const one = await createOrg()
    const two = await createOrg()
    const a = expectOk(await request('GET', '/v1/account/webhook-secret', { key: one.key })).secret
    const b = expectOk(await request('GET', '/v1/account/webhook-secret', { key: two.key })).secret
    expect(a).not.toBe(b)
    expect(await signingSecrets(ctx.sql, ctx.keys, two.orgId)).toEqual([b])
  })
})

describe('POST /v1/account/webhook-secret/rotate', () => {
  test('returns a new secret, which reads return from then on', async () => {
    const org = await createOrg()
    const old = expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key })).secret
    const res = await request('POST', '/v1/account/webhook-secret/rotate', { key: org.key })
    const rotated = expectOk(res).secret
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(rotated).not.toBe(old)
    expect(expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key })).secret).toBe(rotated)
  })

  test('both secrets sign deliveries during the grace window, the new one first', async () => {
    const org = await createOrg()
    const old = expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key })).secret
    expect(await signingSecrets(ctx.sql, ctx.keys, org.orgId)).toEqual([old])
    const rotated = expectOk(await request('POST', '/v1/account/webhook-secret/rotate', { key: org.key })).secret
    expect(await signingSecrets(ctx.sql, ctx.keys, org.orgId)).toEqual([rotated, old])
    // once the grace window is over only the new one signs
    await ctx.sql`update webhook_secrets set previous_expires_at = now() - interval '1 second' where org_id = ${org.orgId}`
    expect(await signingSecrets(ctx.sql, ctx.keys, org.orgId)).toEqual([rotated])
  })

  test('rotating an org that never read its secret works', async () => {
    const org = await createOrg()
    const rotated = expectOk(await request('POST', '/v1/account/webhook-secret/rotate', { key: org.key })).secret
    expect(expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key })).secret).toBe(rotated)
  })

  test('a second rotation within 60 minutes is 429 rate_limit_exceeded with Retry-After, and changes nothing', async () => {
    const org = await createOrg()
    const rotated = expectOk(await request('POST', '/v1/account/webhook-secret/rotate', { key: org.key })).secret
    const again = await request('POST', '/v1/account/webhook-secret/rotate', { key: org.key })
    expectError(again, 429, 'rate_limit_exceeded')
    const retryAfter = Number(again.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(59 * 60)
    expect(retryAfter).toBeLessThanOrEqual(60 * 60)
    expect(expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key })).secret).toBe(rotated)
  })

  test('allowed again once 60 minutes have passed', async () => {
    const org = await createOrg()
    expectOk(await request('POST', '/v1/account/webhook-secret/rotate', { key: org.key }))
    await ctx.sql`update webhook_secrets set rotated_at = now() - interval '61 minutes' where org_id = ${org.orgId}`
    expectOk(await request('POST', '/v1/account/webhook-secret/rotate', { key: org.key }))
  })

  test("rotation of one organization leaves another's secret alone", async () => {
    const one = await createOrg()
    const two = await createOrg()
    const b = expectOk(await request('GET', '/v1/account/webhook-secret', { key: two.key })).secret
    expectOk(await request('POST', '/v1/account/webhook-secret/rotate', { key: one.key }))
    expect(expectOk(await request('GET', '/v1/account/webhook-secret', { key: two.key })).secret).toBe(b)
  })

  test('concurrent rotations: exactly one wins', async () => {
    const org = await createOrg()
    expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key }))
    const results = await Promise.all([1, 2, 3].map(() => request('POST', '/v1/account/webhook-secret/rotate', { key: org.key })))
    expect(results.map(r => r.status).sort()).toEqual([200, 429, 429])
    const winner = results.find(r => r.status === 200)!.body.data.secret
    expect(expectOk(await request('GET', '/v1/account/webhook-secret', { key: org.key })).secret).toBe(winner)
  })
})
