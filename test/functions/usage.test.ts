/**
 * GET /v1/functions/usage (the whole organization) and /v1/functions/{id}/usage after real
 * invocations in real sandboxes, recorded as deliveries record them: figures, isolation between
 * organizations, the `since` window and its validation.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { invokeFunction } from '../../src/functions/run'

let h: TestApp
beforeAll(async () => {
  h = await testApp({ FUNCTION_CPU_MS: '5000', FUNCTION_WALL_CLOCK_MS: '10000' })
})

let n = 0
async function deploy(org: TestOrg, code: string) {
  const res = await h.request('POST', '/v1/functions', { key: org.key, body: { name: `usage-${++n}`, code } })
  expect(res.body.data?.deploy_status).toBe('deployed')
  return res.body.data.id as string
}

async function invoke(org: TestOrg, functionId: string, times = 1) {
  for (let i = 0; i < times; i++) {
    const invocation = await invokeFunction(h.ctx, {
      orgId: org.orgId,
      functionId,
      request: { method: 'POST', url: `https://functions.internal/${functionId}`, headers: [], body: null },
    })
    expect(invocation).not.toBeNull()
  }
}

const usage = (org: TestOrg, query = '') => h.request('GET', `/v1/functions/usage${query}`, { key: org.key })
const usageOf = (org: TestOrg, id: string, query = '') => h.request('GET', `/v1/functions/${id}/usage${query}`, { key: org.key })

// a little work of its own, so that its CPU time is measurable above the thread clock's granularity
const LOGGING = `export default { async fetch() { let x = 0; for (let i = 0; i < 300000; i++) x += i; console.log('one'); console.info('two'); return new Response(String(x > 0)) } }`
const THROWING = `export default { async fetch() { console.error('about to throw'); throw new Error('no') } }`
const QUIET = `export default { async fetch() { return new Response('ok') } }`

describe('GET /v1/functions/usage', () => {
  test("sums every function of the organization, and only the organization's", async () => {
    const org = await createOrg()
    const other = await createOrg()
    const logging = await deploy(org, LOGGING)
    const throwing = await deploy(org, THROWING)
    const foreign = await deploy(other, QUIET)
    const started = new Date(Date.now() - 1000)

    const empty = await usage(org)
    expect(empty.status).toBe(200)
    expect(empty.body.data).toMatchObject({ function_id: null, invocations: 0, by_outcome: {}, cpu_ms: 0, wall_ms: 0, log_lines: 0 })

    await invoke(org, logging, 2)
    await invoke(org, throwing, 1)
    await invoke(other, foreign, 3)

    const all = (await usage(org)).body.data
    expect(all).toMatchObject({ function_id: null, invocations: 3, by_outcome: { ok: 2, exception: 1 }, log_lines: 5 })
    expect(all.cpu_ms).toBeGreaterThan(0)
    expect(all.wall_ms).toBeGreaterThanOrEqual(all.cpu_ms)
    // the default window: the last 30 days
    expect(Math.abs(Date.parse(all.since) - (Date.now() - 30 * 86_400_000))).toBeLessThan(60_000)

    // the organization's figures are the sums of its functions' own
    const [a, b] = await Promise.all([usageOf(org, logging), usageOf(org, throwing)]).then(rs => rs.map(r => r.body.data))
    expect(a).toMatchObject({ function_id: logging, invocations: 2, by_outcome: { ok: 2 }, log_lines: 4 })
    expect(b).toMatchObject({ function_id: throwing, invocations: 1, by_outcome: { exception: 1 }, log_lines: 1 })
    expect(all.cpu_ms).toBeCloseTo(a.cpu_ms + b.cpu_ms, 1)
    expect(all.wall_ms).toBeCloseTo(a.wall_ms + b.wall_ms, 1)

    // the other organization sees its own invocations only, and not this one's function
    expect((await usage(other)).body.data).toMatchObject({ invocations: 3, by_outcome: { ok: 3 }, log_lines: 0 })
    expectError(await usageOf(other, logging), 404, 'not_found')
    expect((await usage(await createOrg())).body.data).toMatchObject({ invocations: 0, by_outcome: {}, log_lines: 0 })

    // a deleted function's invocations still count: they were used
    await h.request('DELETE', `/v1/functions/${throwing}`, { key: org.key })
    expect((await usage(org)).body.data).toMatchObject({ invocations: 3, by_outcome: { ok: 2, exception: 1 } })

    // since: a window that starts after the invocations is empty; one before them has them all
    const later = (await usage(org, `?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body.data
    expect(later).toMatchObject({ invocations: 0, by_outcome: {}, cpu_ms: 0, wall_ms: 0, log_lines: 0 })
    const since = started.toISOString()
    const window = (await usage(org, `?since=${encodeURIComponent(since)}`)).body.data
    expect(window).toMatchObject({ since, invocations: 3 })
    // an offset names the same instant
    const offset = new Date(started.getTime() + 2 * 3600_000).toISOString().replace('Z', '+02:00')
    expect((await usage(org, `?since=${encodeURIComponent(offset)}`)).body.data).toMatchObject({ since, invocations: 3 })
  }, 30_000)

  test('a bad since is a validation error naming it', async () => {
    const org = await createOrg()
    for (const [value, reason] of [
      ['yesterday', /^since: must be an ISO 8601 timestamp with a time zone/],
      ['2026-11-01', /^since: must be a date and time, not a bare date/],
      ['2026-11-01T10:00:00', /^since: must carry a time zone/],
      ['2026-02-30T10:00:00Z', /^since: is not a valid calendar date and time/],
    ] as const) {
      expectError(await usage(org, `?since=${encodeURIComponent(value)}`), 400, 'validation_error', reason)
    }
    expectError(await h.request('GET', '/v1/functions/usage'), 401, 'unauthorized')
  })
})
