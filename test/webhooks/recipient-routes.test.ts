/** Recipient routes: create (to an endpoint or a function), validation, plan gating, conflicts, list, read, delete; route selection. */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { matchingRoute } from '../../src/webhooks/recipient-routes.service'
import { HOOK_URL, randomId, webhookResolver } from './crud-helpers'

const app = await testApp({}, { resolver: webhookResolver() })
const { request } = app
const MANAGED = 'agents.test.local'

async function routeTarget(key: string, extra: Record<string, unknown> = {}) {
  return expectOk(await request('POST', '/v1/endpoints', { key, body: { url: HOOK_URL, is_route_target: true, ...extra } }), 201)
}

async function create(key: string, body: Record<string, unknown>) {
  return expectOk(await request('POST', '/v1/routes', { key, body }), 201)
}

describe('create', () => {
  test('201 to a route-target endpoint; the pattern trimmed and lowercased', async () => {
    const org = await createOrg()
    const e = await routeTarget(org.key)
    const r = await create(org.key, { pattern: ` Support@${MANAGED.toUpperCase()} `, endpoint_id: e.id })
    expect(r).toEqual({ id: expect.any(String), pattern: `support@${MANAGED}`, endpoint_id: e.id, created_at: expect.any(String) })
    expect(Math.abs(Date.parse(r.created_at) - Date.now())).toBeLessThan(60_000)
    expect(expectOk(await request('GET', `/v1/routes/${r.id}`, { key: org.key }))).toEqual(r)
  })

  test('to a function_id: a route-target function endpoint is minted, then reused', async () => {
    const org = await createOrg()
    const fn = randomId()
    const r1 = await create(org.key, { pattern: `a@${MANAGED}`, function_id: fn })
    const e = expectOk(await request('GET', `/v1/endpoints/${r1.endpoint_id}`, { key: org.key }))
    expect(e).toMatchObject({ kind: 'function', url: `function://${fn}`, function_id: fn, enabled: true, domain_id: null, is_route_target: true, rules: {} })
    const r2 = await create(org.key, { pattern: `b@${MANAGED}`, function_id: fn })
    expect(r2.endpoint_id).toBe(e.id)
    // the function's one endpoint, also through the endpoints API
    expect(expectOk(await request('POST', '/v1/endpoints', { key: org.key, body: { kind: 'function', function_id: fn } }), 200).id).toBe(e.id)
    expect(expectOk(await request('GET', '/v1/endpoints', { key: org.key }))).toHaveLength(1)
  })

  test('a function whose endpoint is a default (not a route target) is 409', async () => {
    const org = await createOrg()
    const fn = randomId()
    const e = expectOk(await request('POST', '/v1/endpoints', { key: org.key, body: { kind: 'function', function_id: fn } }), 201)
    const res = await request('POST', '/v1/routes', { key: org.key, body: { pattern: `a@${MANAGED}`, function_id: fn } })
    expectError(res, 409, 'conflict', new RegExp(`^function_id: function ${fn} already has endpoint ${e.id}, which is not a route target`))
    expect(res.body.error.details).toEqual({ conflicting_endpoint_id: e.id })
  })

  test('endpoint_id must name a route target', async () => {
    const org = await createOrg()
    const plain = expectOk(await request('POST', '/v1/endpoints', { key: org.key, body: { url: HOOK_URL } }), 201)
    expectError(
      await request('POST', '/v1/routes', { key: org.key, body: { pattern: `a@${MANAGED}`, endpoint_id: plain.id } }),
      400,
      'validation_error',
      'endpoint_id: must be a route-target endpoint (is_route_target: true)',
    )
  })

  test('a deactivated, unknown or foreign endpoint is 404', async () => {
    const org = await createOrg()
    const other = await createOrg()
    const gone = await routeTarget(org.key)
    expectOk(await request('DELETE', `/v1/endpoints/${gone.id}`, { key: org.key }))
    const theirs = await routeTarget(other.key)
    for (const endpoint_id of [gone.id, randomId(), theirs.id]) {
      expectError(
        await request('POST', '/v1/routes', { key: org.key, body: { pattern: `a@${MANAGED}`, endpoint_id } }),
        404,
        'not_found',
        'endpoint: not found',
      )
    }
  })

  test('a disabled route target may be routed to', async () => {
    const org = await createOrg()
    const e = await routeTarget(org.key, { enabled: false })
    expect((await create(org.key, { pattern: `a@${MANAGED}`, endpoint_id: e.id })).endpoint_id).toBe(e.id)
  })

  test('the same pattern twice is 409 naming the existing route; a minted endpoint is rolled back with it', async () => {
    const org = await createOrg()
    const e = await routeTarget(org.key)
    const r = await create(org.key, { pattern: `sales@${MANAGED}`, endpoint_id: e.id })
    for (const body of [
      { pattern: `sales@${MANAGED}`, endpoint_id: e.id },
      { pattern: ` SALES@${MANAGED}`, function_id: randomId() },
    ]) {
      const res = await request('POST', '/v1/routes', { key: org.key, body })
      expectError(res, 409, 'conflict', `pattern: a route for sales@${MANAGED} already exists (${r.id}); delete it first`)
      expect(res.body.error.details).toEqual({ conflicting_route_id: r.id })
    }
    expect(expectOk(await request('GET', '/v1/endpoints', { key: org.key })).map((x: any) => x.id)).toEqual([e.id])
    // another organization may route the same pattern
    const other = await createOrg()
    await create(other.key, { pattern: `sales@${MANAGED}`, endpoint_id: (await routeTarget(other.key)).id })
  })

  test('each invalid body is a validation_error naming the field', async () => {
    const org = await createOrg()
    const e = await routeTarget(org.key)
    const fn = randomId()
    const cases: [Record<string, unknown>, string | RegExp][] = [
      [{ pattern: `a@${MANAGED}` }, 'endpoint_id: is required (or function_id)'],
      [{ pattern: `a@${MANAGED}`, endpoint_id: e.id, function_id: fn }, 'function_id: must not be set together with endpoint_id'],
      [{ endpoint_id: e.id }, 'pattern: is required'],
      [{ pattern: '', endpoint_id: e.id }, 'pattern: must not be empty'],
      [{ pattern: '  ', endpoint_id: e.id }, 'pattern: must not be empty'],
      [{ pattern: MANAGED, endpoint_id: e.id }, /^pattern: must be an address, an @domain/],
      [{ pattern: `a@b@${MANAGED}`, endpoint_id: e.id }, 'pattern: must contain at most one @'],
      [{ pattern: `a b@${MANAGED}`, endpoint_id: e.id }, 'pattern: must not contain spaces'],
      [{ pattern: `${'a'.repeat(500)}@${MANAGED}`, endpoint_id: e.id }, 'pattern: must be at most 500 characters'],
      [{ pattern: `a@${MANAGED}`, endpoint_id: 'nope' }, /^endpoint_id: /],
      [{ pattern: `a@${MANAGED}`, function_id: 'nope' }, /^function_id: /],
      [{ pattern: `a@${MANAGED}`, endpoint_id: e.id, priority: 1 }, 'priority: is not a known field'],
    ]
    for (const [body, message] of cases) expectError(await request('POST', '/v1/routes', { key: org.key, body }), 400, 'validation_error', message)
    expect(expectOk(await request('GET', '/v1/routes', { key: org.key }))).toEqual([])
  })
})

describe('plans', () => {
  test('free and agent plans route managed addresses only; other patterns are 403 routes_per_domain', async () => {
    for (const plan of ['free', 'agent'] as const) {
      const org = await createOrg({ plan })
      const e = await routeTarget(org.key)
      for (const pattern of [`bot@${MANAGED}`, `*@${MANAGED}`, `@${MANAGED}`, `support-*@${MANAGED}`]) await create(org.key, { pattern, endpoint_id: e.id })
      for (const pattern of ['vip@example.com', '@example.com', '*', '*@*', `a@sub.${MANAGED}`, `a@*.${MANAGED}`, 'a@agents.test.local.evil.example']) {
        const res = await request('POST', '/v1/routes', { key: org.key, body: { pattern, endpoint_id: e.id } })
        expectError(res, 403, 'feature_disabled', new RegExp(`^pattern: routes for addresses outside ${MANAGED} are not included in the ${plan} plan`))
        expect(res.body.error.details).toMatchObject({ missing_entitlement: 'routes_per_domain' })
      }
    }
  })

  test('paid plans route any address', async () => {
    const org = await createOrg({ plan: 'developer' })
    const e = await routeTarget(org.key)
    for (const pattern of ['vip@example.com', '@example.com', '*', '*@*.example.com']) await create(org.key, { pattern, endpoint_id: e.id })
  })

  test('free plan: minting a function endpoint counts against webhooks_max_global; nothing is left behind', async () => {
    const org = await createOrg({ plan: 'free' })
    expectOk(await request('POST', '/v1/endpoints', { key: org.key, body: { url: HOOK_URL } }), 201)
    const res = await request('POST', '/v1/routes', { key: org.key, body: { pattern: `a@${MANAGED}`, function_id: randomId() } })
    expectError(res, 403, 'feature_disabled')
    expect(res.body.error.details.missing_entitlement).toBe('webhooks_max_global')
    expect(expectOk(await request('GET', '/v1/routes', { key: org.key }))).toEqual([])
    expect(expectOk(await request('GET', '/v1/endpoints', { key: org.key }))).toHaveLength(1)
  })
})

describe('list, read, delete', () => {
  test('newest first, paginated', async () => {
    const org = await createOrg()
    const e = await routeTarget(org.key)
    const made = []
    for (let i = 0; i < 3; i++) made.push(await create(org.key, { pattern: `r${i}@${MANAGED}`, endpoint_id: e.id }))
    const first = await request('GET', '/v1/routes?limit=2', { key: org.key })
    expect(expectOk(first).map((r: any) => r.id)).toEqual([made[2].id, made[1].id])
    const { cursor, total } = first.body.meta
    expect(total).toBe(3)
    const second = await request('GET', `/v1/routes?limit=2&cursor=${cursor}`, { key: org.key })
    expect(expectOk(second).map((r: any) => r.id)).toEqual([made[0].id])
    expect(second.body.meta.cursor).toBeNull()
  })

  test('DELETE removes the route and keeps its endpoint', async () => {
    const org = await createOrg()
    const e = await routeTarget(org.key)
    const r = await create(org.key, { pattern: `a@${MANAGED}`, endpoint_id: e.id })
    expect(expectOk(await request('DELETE', `/v1/routes/${r.id}`, { key: org.key }))).toEqual({ id: r.id, deleted: true })
    expectError(await request('GET', `/v1/routes/${r.id}`, { key: org.key }), 404, 'not_found', 'route: not found')
    expectError(await request('DELETE', `/v1/routes/${r.id}`, { key: org.key }), 404, 'not_found', 'route: not found')
    expectOk(await request('GET', `/v1/endpoints/${e.id}`, { key: org.key }))
    // the pattern is free again
    await create(org.key, { pattern: `a@${MANAGED}`, endpoint_id: e.id })
  })

  test('deactivating an endpoint deletes the routes to it', async () => {
    const org = await createOrg()
    const e = await routeTarget(org.key)
    const keep = await routeTarget(org.key)
    const r = await create(org.key, { pattern: `a@${MANAGED}`, endpoint_id: e.id })
    const kept = await create(org.key, { pattern: `b@${MANAGED}`, endpoint_id: keep.id })
    expectOk(await request('DELETE', `/v1/endpoints/${e.id}`, { key: org.key }))
    expectError(await request('GET', `/v1/routes/${r.id}`, { key: org.key }), 404, 'not_found')
    expect(expectOk(await request('GET', '/v1/routes', { key: org.key }))).toEqual([kept])
  })

  test("another organization's routes are 404; malformed ids 400; no credential 401", async () => {
    const owner = await createOrg()
    const intruder = await createOrg()
    const r = await create(owner.key, { pattern: `a@${MANAGED}`, endpoint_id: (await routeTarget(owner.key)).id })
    expectError(await request('GET', `/v1/routes/${r.id}`, { key: intruder.key }), 404, 'not_found')
    expectError(await request('DELETE', `/v1/routes/${r.id}`, { key: intruder.key }), 404, 'not_found')
    expect(expectOk(await request('GET', '/v1/routes', { key: intruder.key }))).toEqual([])
    expect(expectOk(await request('GET', `/v1/routes/${r.id}`, { key: owner.key }))).toEqual(r)
    expectError(await request('GET', '/v1/routes/nope', { key: owner.key }), 400, 'validation_error', /^id: /)
    expectError(await request('GET', '/v1/routes'), 401, 'unauthorized')
  })
})

describe('selection helpers', () => {
  const route = (id: string, pattern: string) => ({ id, pattern })

  test('matchingRoute: exact address first, then the most literal characters, then fewer *, then the oldest', () => {
    const routes = [
      route('all', '*'),
      route('domain', '@example.com'),
      route('domain-star', '*@example.com'),
      route('prefix', 'billing-*@example.com'),
      route('prefix-any', 'billing-*@*'),
      route('exact', 'billing-eu@example.com'),
      route('other', '*@other.example'),
    ]
    expect(matchingRoute(routes, 'Billing-EU@Example.com')?.id).toBe('exact')
    expect(matchingRoute(routes, 'billing-us@example.com')?.id).toBe('prefix')
    expect(matchingRoute(routes, 'billing-us@elsewhere.example')?.id).toBe('prefix-any')
    // `@example.com` and `*@example.com` say the same; the older wins
    expect(matchingRoute(routes, 'sam@example.com')?.id).toBe('domain')
    expect(matchingRoute(routes, 'sam@sub.example.com')?.id).toBe('all')
    expect(matchingRoute(routes.slice(1), 'sam@sub.example.com')).toBeNull()
    expect(matchingRoute([], 'sam@example.com')).toBeNull()
  })

  test('matchingRoute: more literal characters beat fewer stars', () => {
    expect(matchingRoute([route('short', 'a*@x.example'), route('long', '*a*b*@x.example')], 'ab@x.example')?.id).toBe('long')
  })
})
