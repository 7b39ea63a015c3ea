/**
 * The API rate limits: per organization (shared by every process through the database) and per
 * client address for requests without valid credentials. Windows are fixed 60-second windows
 * aligned to the minute, so each test starts well inside a window.
 */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestResponse } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { roomInWindow } from '../helpers/rate-window'

/** Waiting for a fresh window can take up to 8 s. */
const TIMEOUT = 20_000

function expectRateLimited(res: TestResponse, limit: number) {
  expectError(res, 429, 'rate_limited')
  const retryAfter = Number(res.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
  expect(res.headers.get('ratelimit-limit')).toBe(String(limit))
  expect(res.headers.get('ratelimit-policy')).toBe(`${limit};w=60`)
  expect(res.headers.get('ratelimit-remaining')).toBe('0')
  const reset = Number(res.headers.get('ratelimit-reset'))
  const now = Date.now() / 1000
  expect(reset).toBeGreaterThan(now)
  expect(reset).toBeLessThanOrEqual(now + 61)
  expect(reset % 60).toBe(0) // the end of a minute-aligned window
}

describe('per-organization limit', () => {
  test(
    'agent plan: 120 per minute across two processes, then 429 rate_limited',
    async () => {
      await roomInWindow()
      const apps = [await testApp(), await testApp()]
      const org = await createOrg({ plan: 'agent' })
      const statuses: number[] = []
      let last: TestResponse | undefined
      for (let i = 0; i < 140; i++) {
        last = await apps[i % 2]!.request('GET', '/v1/whoami', { key: org.key })
        statuses.push(last.status)
      }
      const ok = statuses.filter(s => s === 200).length
      expect(ok).toBeLessThanOrEqual(120)
      expect(ok).toBeGreaterThanOrEqual(110)
      expect(statuses.every(s => s === 200 || s === 429)).toBe(true)
      // once the shared counter is spent, only tokens another process already leased (at most
      // ceil(120 / 50) = 3) can still be served
      const firstRefusal = statuses.indexOf(429)
      expect(firstRefusal).toBeGreaterThan(0)
      expect(statuses.slice(firstRefusal).filter(s => s === 200).length).toBeLessThanOrEqual(3)
      expect(statuses.slice(-10).every(s => s === 429)).toBe(true)
      expectRateLimited(last!, 120)
      expect(last!.body.error.message).toMatch(/rate limit/)
    },
    TIMEOUT,
  )

  test(
    'success responses carry the limit headers with a falling remaining count',
    async () => {
      await roomInWindow()
      const { request } = await testApp()
      const org = await createOrg({ plan: 'developer' })
      const a = await request('GET', '/v1/whoami', { key: org.key })
      const b = await request('GET', '/v1/whoami', { key: org.key })
      expect(a.headers.get('ratelimit-limit')).toBe('3000')
      expect(a.headers.get('ratelimit-policy')).toBe('3000;w=60')
      expect(Number(b.headers.get('ratelimit-remaining'))).toBeLessThan(Number(a.headers.get('ratelimit-remaining')))
      expect(Number(a.headers.get('ratelimit-remaining'))).toBeLessThanOrEqual(2999)
    },
    TIMEOUT,
  )

  test(
    'keys of one organization share its limit; another organization is unaffected',
    async () => {
      await roomInWindow()
      const { request } = await testApp()
      const org = await createOrg({ plan: 'agent' })
      const second = expectOk(await request('POST', '/v1/api-keys', { key: org.key, body: { name: 'second' } }), 201).key as string
      let refused: TestResponse | undefined
      for (let i = 0; i < 130 && !refused; i++) {
        const res = await request('GET', '/v1/whoami', { key: i % 2 ? second : org.key })
        if (res.status === 429) refused = res
      }
      expect(refused).toBeDefined()
      expectRateLimited(await request('GET', '/v1/account', { key: second }), 120)
      expectRateLimited(await request('GET', '/v1/account', { key: org.key }), 120)
      const other = await createOrg({ plan: 'agent' })
      expectOk(await request('GET', '/v1/whoami', { key: other.key }))
    },
    TIMEOUT,
  )
})

describe('per-address limit for requests without valid credentials', () => {
  test(
    '121 calls to GET /v1 from one address: the last is 429',
    async () => {
      await roomInWindow()
      const { request } = await testApp()
      const ip = '203.0.113.77'
      const statuses: number[] = []
      for (let i = 0; i < 120; i++) statuses.push((await request('GET', '/v1', { ip })).status)
      expect(statuses.every(s => s === 200)).toBe(true)
      expectRateLimited(await request('GET', '/v1', { ip }), 120)
      // another address is not affected
      expect((await request('GET', '/v1', { ip: '203.0.113.78' })).status).toBe(200)
    },
    TIMEOUT,
  )

  test(
    'failed authentications count against the address, and the limit covers public and authenticated routes',
    async () => {
      await roomInWindow()
      const { request } = await testApp()
      const ip = '203.0.113.88'
      const bogus = `svc_${'Z'.repeat(43)}`
      for (let i = 0; i < 60; i++) expectError(await request('GET', '/v1/whoami', { key: bogus, ip }), 401, 'unauthorized')
      for (let i = 0; i < 60; i++) expect((await request('GET', '/v1/health', { ip })).status).toBe(200)
      // exhausted: unauthenticated calls are refused before the credential is even looked at
      expectRateLimited(await request('GET', '/v1/whoami', { key: bogus, ip }), 120)
      expectRateLimited(await request('GET', '/v1', { ip }), 120)
      expectRateLimited(await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, ip }), 120)
      // a valid credential from the same address is limited per organization, not per address
      const org = await createOrg()
      expectOk(await request('GET', '/v1/whoami', { key: org.key, ip }))
    },
    TIMEOUT,
  )

  test(
    'invalid bodies sent to a public operation count too',
    async () => {
      await roomInWindow()
      const { request } = await testApp()
      const ip = '203.0.113.99'
      for (let i = 0; i < 120; i++) expect((await request('POST', '/v1/agent/accounts', { body: { terms_accepted: false }, ip })).status).toBe(400)
      expectRateLimited(await request('POST', '/v1/agent/accounts', { body: { terms_accepted: false }, ip }), 120)
    },
    TIMEOUT,
  )
})
