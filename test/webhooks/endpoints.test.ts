/** Webhook endpoints: create (validation, SSRF, slots, plan limits, functions), list, read, update, deactivate. */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { findEndpoint } from '../../src/webhooks/endpoints.service'
import { claimDomain, HOOK_URL, randomId, webhookResolver } from './crud-helpers'

const resolver = webhookResolver()
const app = await testApp({}, { resolver })
const { ctx, request } = app

async function create(key: string, body: Record<string, unknown>, status = 201) {
  return expectOk(await request('POST', '/v1/endpoints', { key, body }), status)
}

describe('create', () => {
  test('201 with the defaults: an enabled http endpoint in the fallback slot, no rules', async () => {
    const org = await createOrg()
    const e = await create(org.key, { url: HOOK_URL })
    expect(e).toEqual({
      id: expect.any(String),
      kind: 'http',
      url: HOOK_URL,
      function_id: null,
      enabled: true,
      domain_id: null,
      is_route_target: false,
      rules: {},
      created_at: expect.any(String),
      updated_at: e.created_at,
    })
    expect(Math.abs(Date.parse(e.created_at) - Date.now())).toBeLessThan(60_000)
    expect(expectOk(await request('GET', `/v1/endpoints/${e.id}`, { key: org.key }))).toEqual(e)
  })

  test('the URL is stored in its normalized form', async () => {
    const org = await createOrg()
    const e = await create(org.key, { url: 'HTTPS://Hooks.Example.COM:443/a/../in?x=1' })
    expect(e.url).toBe('https://hooks.example.com/in?x=1')
  })

  test('every field set: a per-domain endpoint with all rules; sender addresses lowercased and deduplicated', async () => {
    const org = await createOrg()
    const domain = await claimDomain(app, org.key)
    const rules = {
      max_size_bytes: 1_000_000,
      exclude_attachments: true,
      attachment_limit_mb: 2.5,
      sender_whitelist: ['Boss@Example.com', 'boss@example.com', 'ops@example.com'],
      sender_blacklist: ['SPAM@example.org'],
      event_types: ['email.received', 'email.recieved', 'payment.settled'],
    }
    const e = await create(org.key, { kind: 'http', url: HOOK_URL, enabled: false, domain_id: domain.id, is_route_target: false, rules })
    expect(e).toMatchObject({ kind: 'http', enabled: false, domain_id: domain.id, is_route_target: false })
    // event_types are not checked against known names: a misspelt one is kept and matches nothing
    expect(e.rules).toEqual({ ...rules, sender_whitelist: ['boss@example.com', 'ops@example.com'], sender_blacklist: ['spam@example.org'] })
  })

  test('a function endpoint has the opaque function:// url; creating it again returns the same row, unchanged, with 200', async () => {
    const org = await createOrg()
    const fn = randomId()
    const e = await create(org.key, { kind: 'function', function_id: fn, rules: { event_types: ['email.received'] } })
    expect(e).toMatchObject({ kind: 'function', url: `function://${fn}`, function_id: fn, enabled: true, domain_id: null, is_route_target: false })
    const again = await create(org.key, { kind: 'function', function_id: fn.toUpperCase(), rules: { max_size_bytes: 5 } }, 200)
    expect(again).toEqual(e)
    expect(expectOk(await request('GET', '/v1/endpoints', { key: org.key })).map((x: any) => x.id)).toEqual([e.id])
    // the same function in another organization is another endpoint
    const other = await createOrg()
    expect((await create(other.key, { kind: 'function', function_id: fn })).id).not.toBe(e.id)
  })

  test('kind, url and function_id must agree', async () => {
    const org = await createOrg()
    const fn = randomId()
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'url: is required for an http endpoint'],
      [{ kind: 'http' }, 'url: is required for an http endpoint'],
      [{ kind: 'function' }, 'function_id: is required for a function endpoint'],
      [{ kind: 'function', function_id: fn, url: HOOK_URL }, 'url: must not be set for a function endpoint'],
      [{ url: HOOK_URL, function_id: fn }, 'function_id: must not be set for an http endpoint'],
    ]
    for (const [body, message] of cases) expectError(await request('POST', '/v1/endpoints', { key: org.key, body }), 400, 'validation_error', message)
  })

  test('each malformed field is a validation_error naming it', async () => {
    const org = await createOrg()
    const cases: [Record<string, unknown>, string | RegExp][] = [
      [{ kind: 'ftp', url: HOOK_URL }, /^kind: must be one of http, function/],
      [{ url: 42 }, 'url: must be a string'],
      [{ url: '' }, 'url: must not be empty'],
      [{ url: `https://hooks.example.com/${'a'.repeat(2048)}` }, 'url: must be at most 2048 characters'],
      [{ kind: 'function', function_id: 'not-a-uuid' }, /^function_id: /],
      [{ url: HOOK_URL, enabled: 'yes' }, 'enabled: must be a boolean'],
      [{ url: HOOK_URL, is_route_target: 1 }, 'is_route_target: must be a boolean'],
      [{ url: HOOK_URL, domain_id: 'example.com' }, 'domain_id: must be a domain id (uuid) or null'],
      [{ url: HOOK_URL, colour: 'red' }, 'colour: is not a known field'],
      [{ url: HOOK_URL, rules: [] }, 'rules: must be an object'],
      [{ url: HOOK_URL, rules: { colour: 'red' } }, 'rules.colour: is not a known field'],
      [{ url: HOOK_URL, rules: { event_types: [] } }, 'rules.event_types: must not be empty'],
      [{ url: HOOK_URL, rules: { event_types: Array.from({ length: 51 }, (_, i) => `t${i}`) } }, 'rules.event_types: must have at most 50 items'],
      [{ url: HOOK_URL, rules: { event_types: [''] } }, 'rules.event_types[0]: must not be empty'],
      [{ url: HOOK_URL, rules: { event_types: ['email.received', 'x'.repeat(101)] } }, 'rules.event_types[1]: must be at most 100 characters'],
      [{ url: HOOK_URL, rules: { event_types: 'email.received' } }, 'rules.event_types: must be an array'],
      [{ url: HOOK_URL, rules: { max_size_bytes: 0 } }, 'rules.max_size_bytes: must be at least 1'],
      [{ url: HOOK_URL, rules: { max_size_bytes: 1.5 } }, 'rules.max_size_bytes: must be an integer'],
      [{ url: HOOK_URL, rules: { max_size_bytes: '5' } }, 'rules.max_size_bytes: must be an integer'],
      [{ url: HOOK_URL, rules: { attachment_limit_mb: 0 } }, 'rules.attachment_limit_mb: must be a number greater than 0'],
      [{ url: HOOK_URL, rules: { attachment_limit_mb: -1 } }, 'rules.attachment_limit_mb: must be a number greater than 0'],
      [{ url: HOOK_URL, rules: { exclude_attachments: 'yes' } }, 'rules.exclude_attachments: must be a boolean'],
      [{ url: HOOK_URL, rules: { sender_whitelist: ['not an address'] } }, 'rules.sender_whitelist[0]: must be an email address'],
      [{ url: HOOK_URL, rules: { sender_blacklist: 'spam@example.org' } }, 'rules.sender_blacklist: must be an array'],
      [
        { url: HOOK_URL, rules: { sender_whitelist: Array.from({ length: 1001 }, (_, i) => `s${i}@example.com`) } },
        'rules.sender_whitelist: must have at most 1000 items',
      ],
    ]
    for (const [body, message] of cases) expectError(await request('POST', '/v1/endpoints', { key: org.key, body }), 400, 'validation_error', message)
    expectError(await request('POST', '/v1/endpoints', { key: org.key, body: '{"url":' }), 400, 'validation_error', 'body: is not valid JSON')
    expect(expectOk(await request('GET', '/v1/endpoints', { key: org.key }))).toEqual([])
  })

  test('URLs that are not https URLs of a resolvable host', async () => {
    const org = await createOrg()
    const cases: [string, string][] = [
      ['hooks.example.com/inbound', 'url: must be an absolute URL'],
      ['ftp://hooks.example.com/inbound', 'url: must be an https URL'],
      ['http://hooks.example.com/inbound', 'url: must be an https URL'],
      ['https://user:secret@hooks.example.com/inbound', 'url: must not carry credentials'],
      ['https://hooks.example.com/inbound#frag', 'url: must not have a fragment'],
      ['https://nowhere.example.com/inbound', 'url: host nowhere.example.com does not resolve'],
    ]
    for (const [url, message] of cases) expectError(await request('POST', '/v1/endpoints', { key: org.key, body: { url } }), 400, 'validation_error', message)
  })

  test('without an Authorization header: 401', async () => {
    expectError(await request('POST', '/v1/endpoints', { body: { url: HOOK_URL } }), 401, 'unauthorized')
    expectError(await request('GET', '/v1/endpoints'), 401, 'unauthorized')
  })
})

describe('SSRF: private and loopback hosts are refused (production default)', () => {
  const PRIVATE = [
    '10.0.0.1',
    '172.16.0.1',
    '192.168.1.1',
    '127.0.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '198.18.0.1',
    '240.0.0.1',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:10.0.0.1]',
    '[fe80::1]',
    '[fc00::1]',
    '[::]',
    'localhost',
    'api.localhost',
    // the same addresses in forms URL parsers accept
    '2130706433',
    '0x7f.1',
    '017700000001',
    // names that resolve to private addresses, also when only one of several does
    'internal.example.com',
    'mixed.example.com',
    'metadata.example.com',
  ]

  test.each(PRIVATE)('https://%s is 400 on url', async host => {
    const org = await createOrg()
    const res = await request('POST', '/v1/endpoints', { key: org.key, body: { url: `https://${host}/hook` } })
    expectError(res, 400, 'validation_error', 'url: must be publicly reachable (private, loopback and link-local addresses are refused)')
  })

  test('the same checks apply when PATCH changes the url', async () => {
    const org = await createOrg()
    const e = await create(org.key, { url: HOOK_URL })
    for (const url of ['https://10.0.0.1/hook', 'https://internal.example.com/', 'http://127.0.0.1:8080/']) {
      expectError(await request('PATCH', `/v1/endpoints/${e.id}`, { key: org.key, body: { url } }), 400, 'validation_error', /^url: must be/)
    }
    expect(expectOk(await request('GET', `/v1/endpoints/${e.id}`, { key: org.key })).url).toBe(HOOK_URL)
  })

  test('names and addresses on the public internet are accepted, IPv6 included', async () => {
    for (const url of [HOOK_URL, 'https://v6.example.com/x', 'https://93.184.216.34/x', 'https://[2606:4700:4700::1111]:8443/x']) {
      const org = await createOrg()
      expect((await create(org.key, { url })).url).toBe(new URL(url).href)
    }
  })

  test('http:// is refused even for a public host, and for loopback without WEBHOOK_ALLOW_LOOPBACK', async () => {
    const org = await createOrg()
    expectError(
      await request('POST', '/v1/endpoints', { key: org.key, body: { url: 'http://hooks.example.com/' } }),
      400,
      'validation_error',
      'url: must be an https URL',
    )
    expectError(
      await request('POST', '/v1/endpoints', { key: org.key, body: { url: 'http://127.0.0.1:8080/' } }),
      400,
      'validation_error',
      /^url: must be publicly reachable/,
    )
    expectError(
      await request('POST', '/v1/endpoints', { key: org.key, body: { url: 'http://localhost:8080/' } }),
      400,
      'validation_error',
      /^url: must be publicly reachable/,
    )
  })

  test('with WEBHOOK_ALLOW_LOOPBACK=true, loopback over http is accepted, other private ranges still refused', async () => {
    const dev = await testApp({ WEBHOOK_ALLOW_LOOPBACK: 'true' }, { resolver })
    for (const url of ['http://127.0.0.1:4321/hook', 'http://localhost/hook', 'http://127.1.2.3/', 'https://localhost:8443/', 'http://[::1]:9000/']) {
      const org = await createOrg()
      expectOk(await dev.request('POST', '/v1/endpoints', { key: org.key, body: { url } }), 201)
    }
    const org = await createOrg()
    for (const url of [
      'https://10.0.0.1/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'https://169.254.169.254/',
      'http://internal.example.com/',
      'http://0.0.0.0/',
    ]) {
      expectError(await dev.request('POST', '/v1/endpoints', { key: org.key, body: { url } }), 400, 'validation_error', /^url: must be publicly reachable/)
    }
    // a public host still needs https
    expectError(
      await dev.request('POST', '/v1/endpoints', { key: org.key, body: { url: 'http://hooks.example.com/' } }),
      400,
      'validation_error',
      'url: must be an https URL',
    )
  })
})

describe('slots', () => {
  test('a second enabled endpoint in the fallback slot is 409 naming the one holding it', async () => {
    const org = await createOrg()
    const first = await create(org.key, { url: HOOK_URL })
    const res = await request('POST', '/v1/endpoints', { key: org.key, body: { url: `${HOOK_URL}/2` } })
    expectError(res, 409, 'conflict', /fallback slot .* is held by enabled endpoint/)
    expect(res.body.error.details).toEqual({ conflicting_endpoint_id: first.id, domain_id: null })
    // a disabled one may wait beside it
    expect((await create(org.key, { url: `${HOOK_URL}/3`, enabled: false })).enabled).toBe(false)
  })

  test('each domain has its own slot, independent of the fallback', async () => {
    const org = await createOrg()
    const [a, b] = [await claimDomain(app, org.key), await claimDomain(app, org.key)]
    await create(org.key, { url: HOOK_URL })
    const onA = await create(org.key, { url: HOOK_URL, domain_id: a.id })
    await create(org.key, { url: HOOK_URL, domain_id: b.id })
    const res = await request('POST', '/v1/endpoints', { key: org.key, body: { url: HOOK_URL, domain_id: a.id } })
    expectError(res, 409, 'conflict', new RegExp(`default slot of domain ${a.id} is held by enabled endpoint ${onA.id}`))
    expect(res.body.error.details).toEqual({ conflicting_endpoint_id: onA.id, domain_id: a.id })
  })

  test('route targets are exempt: any number of them beside the slot holders', async () => {
    const org = await createOrg()
    const domain = await claimDomain(app, org.key)
    await create(org.key, { url: HOOK_URL })
    await create(org.key, { url: HOOK_URL, domain_id: domain.id })
    for (let i = 0; i < 3; i++) {
      expect((await create(org.key, { url: HOOK_URL, is_route_target: true })).is_route_target).toBe(true)
      await create(org.key, { url: HOOK_URL, domain_id: domain.id, is_route_target: true })
    }
    expect(expectOk(await request('GET', '/v1/endpoints', { key: org.key }))).toHaveLength(8)
  })

  test('re-enabling an endpoint, or moving it into a held slot, is 409; nothing changes', async () => {
    const org = await createOrg()
    const domain = await claimDomain(app, org.key)
    const holder = await create(org.key, { url: HOOK_URL })
    const waiting = await create(org.key, { url: HOOK_URL, enabled: false })
    const res = await request('PATCH', `/v1/endpoints/${waiting.id}`, { key: org.key, body: { enabled: true } })
    expectError(res, 409, 'conflict', /fallback slot/)
    expect(res.body.error.details.conflicting_endpoint_id).toBe(holder.id)

    const onDomain = await create(org.key, { url: HOOK_URL, domain_id: domain.id })
    const moved = await request('PATCH', `/v1/endpoints/${onDomain.id}`, { key: org.key, body: { domain_id: null } })
    expectError(moved, 409, 'conflict')
    expect(moved.body.error.details).toEqual({ conflicting_endpoint_id: holder.id, domain_id: null })
    expect(expectOk(await request('GET', `/v1/endpoints/${onDomain.id}`, { key: org.key }))).toEqual(onDomain)

    // disabling the holder frees the slot for the other one
    expectOk(await request('PATCH', `/v1/endpoints/${holder.id}`, { key: org.key, body: { enabled: false } }))
    expect(expectOk(await request('PATCH', `/v1/endpoints/${waiting.id}`, { key: org.key, body: { enabled: true } })).enabled).toBe(true)
  })

  test('deleting the holder frees its slot', async () => {
    const org = await createOrg()
    const holder = await create(org.key, { url: HOOK_URL })
    expectError(await request('POST', '/v1/endpoints', { key: org.key, body: { url: HOOK_URL } }), 409, 'conflict')
    expectOk(await request('DELETE', `/v1/endpoints/${holder.id}`, { key: org.key }))
    await create(org.key, { url: HOOK_URL })
  })

  test('concurrent creates for one slot: exactly one wins, the others are 409', async () => {
    const org = await createOrg()
    const results = await Promise.all(Array.from({ length: 5 }, () => request('POST', '/v1/endpoints', { key: org.key, body: { url: HOOK_URL } })))
    expect(results.map(r => r.status).sort()).toEqual([201, 409, 409, 409, 409])
  })
})

describe('plans', () => {
  test('free plan: one active endpoint; a second is 403 feature_disabled naming webhooks_max_global', async () => {
    for (const plan of ['free', 'agent'] as const) {
      const org = await createOrg({ plan })
      const first = await create(org.key, { url: HOOK_URL })
      for (const body of [
        { url: HOOK_URL, enabled: false },
        { url: HOOK_URL, is_route_target: true },
        { kind: 'function', function_id: randomId() },
      ]) {
        const res = await request('POST', '/v1/endpoints', { key: org.key, body })
        expectError(
          res,
          403,
          'feature_disabled',
          `endpoints: the ${plan} plan allows 1 active endpoint (webhooks_max_global); delete one (DELETE /v1/endpoints/{id}) or upgrade`,
        )
        expect(res.body.error.details).toMatchObject({ missing_entitlement: 'webhooks_max_global', message: res.body.error.message })
      }
      // a deactivated endpoint no longer counts
      expectOk(await request('DELETE', `/v1/endpoints/${first.id}`, { key: org.key }))
      await create(org.key, { url: HOOK_URL })
    }
  })

  test('free plan: re-creating the function endpoint it has is not a second endpoint', async () => {
    const org = await createOrg({ plan: 'free' })
    const fn = randomId()
    const e = await create(org.key, { kind: 'function', function_id: fn })
    expect((await create(org.key, { kind: 'function', function_id: fn }, 200)).id).toBe(e.id)
  })

  test('free plan: a domain_id is 403 feature_disabled (webhooks_per_domain), on create and on update', async () => {
    const org = await createOrg({ plan: 'free' })
    const domain = await claimDomain(app, org.key)
    const res = await request('POST', '/v1/endpoints', { key: org.key, body: { url: HOOK_URL, domain_id: domain.id } })
    expectError(res, 403, 'feature_disabled', /^domain_id: per-domain endpoints are not included in the free plan/)
    expect(res.body.error.details).toMatchObject({ missing_entitlement: 'webhooks_per_domain' })
    const e = await create(org.key, { url: HOOK_URL })
    expectError(await request('PATCH', `/v1/endpoints/${e.id}`, { key: org.key, body: { domain_id: domain.id } }), 403, 'feature_disabled')
  })

  test('an entitlement granted by the operator applies at once', async () => {
    const org = await createOrg({ plan: 'free' })
    const domain = await claimDomain(app, org.key)
    await ctx.sql`update orgs set extra_entitlements = array['webhooks_per_domain'] where id = ${org.orgId}`
    expect((await create(org.key, { url: HOOK_URL, domain_id: domain.id })).domain_id).toBe(domain.id)
  })

  test('paid plans have no endpoint limit', async () => {
    const org = await createOrg({ plan: 'developer' })
    for (let i = 0; i < 3; i++) await create(org.key, { url: HOOK_URL, is_route_target: true })
  })
})

describe('list and read', () => {
  test('newest first, paginated; deactivated endpoints are left out', async () => {
    const org = await createOrg()
    const made = []
    for (let i = 0; i < 5; i++) made.push(await create(org.key, { url: `${HOOK_URL}/${i}`, is_route_target: true }))
    expectOk(await request('DELETE', `/v1/endpoints/${made[2].id}`, { key: org.key }))
    const first = await request('GET', '/v1/endpoints?limit=2', { key: org.key })
    expect(expectOk(first).map((e: any) => e.id)).toEqual([made[4].id, made[3].id])
    const { cursor } = first.body.meta
    // (bun's toMatchObject writes its matchers into the received object, so read values first)
    expect(first.body.meta).toMatchObject({ total: 4, limit: 2, cursor: expect.any(String) })
    const second = await request('GET', `/v1/endpoints?limit=2&cursor=${cursor}`, { key: org.key })
    expect(expectOk(second).map((e: any) => e.id)).toEqual([made[1].id, made[0].id])
    expect(second.body.meta.cursor).toBeNull()
    expectError(await request('GET', '/v1/endpoints?limit=0', { key: org.key }), 400, 'validation_error', /^limit: /)
    expectError(await request('GET', '/v1/endpoints?cursor=forged', { key: org.key }), 400, 'validation_error', /^cursor: /)
  })

  test('a malformed id is 400, an unknown one 404', async () => {
    const org = await createOrg()
    expectError(await request('GET', '/v1/endpoints/not-a-uuid', { key: org.key }), 400, 'validation_error', /^id: /)
    expectError(await request('GET', `/v1/endpoints/${randomId()}`, { key: org.key }), 404, 'not_found', 'endpoint: not found')
  })
})

describe('update', () => {
  test('url, enabled, domain_id and rules change; rules are replaced whole; updated_at moves', async () => {
    const org = await createOrg()
    const domain = await claimDomain(app, org.key)
    const e = await create(org.key, { url: HOOK_URL, rules: { max_size_bytes: 10, exclude_attachments: true } })
    await Bun.sleep(5)
    const u = expectOk(
      await request('PATCH', `/v1/endpoints/${e.id}`, {
        key: org.key,
        body: { url: 'https://v6.example.com/new', enabled: false, domain_id: domain.id, rules: { sender_blacklist: ['X@Example.com'] } },
      }),
    )
    expect(u).toMatchObject({
      id: e.id,
      url: 'https://v6.example.com/new',
      enabled: false,
      domain_id: domain.id,
      rules: { sender_blacklist: ['x@example.com'] },
      created_at: e.created_at,
    })
    expect(Date.parse(u.updated_at)).toBeGreaterThan(Date.parse(e.updated_at))
    expect(expectOk(await request('PATCH', `/v1/endpoints/${e.id}`, { key: org.key, body: { rules: {} } })).rules).toEqual({})
    expect(expectOk(await request('PATCH', `/v1/endpoints/${e.id}`, { key: org.key, body: { domain_id: null } })).domain_id).toBeNull()
  })

  test('an empty body, unknown or fixed fields, and url on a function endpoint are validation errors', async () => {
    const org = await createOrg()
    const e = await create(org.key, { url: HOOK_URL })
    const fn = await create(org.key, { kind: 'function', function_id: randomId(), is_route_target: true })
    const cases: [string, unknown, string | RegExp][] = [
      [e.id, {}, 'body: must set at least one of url, enabled, domain_id, rules'],
      [e.id, undefined, 'body: must set at least one of url, enabled, domain_id, rules'],
      [e.id, { kind: 'function' }, 'kind: is not a known field'],
      [e.id, { is_route_target: true }, 'is_route_target: is not a known field'],
      [e.id, { function_id: randomId() }, 'function_id: is not a known field'],
      [e.id, { enabled: 'no' }, 'enabled: must be a boolean'],
      [e.id, { rules: { event_types: [] } }, 'rules.event_types: must not be empty'],
      [e.id, { domain_id: 'nope' }, 'domain_id: must be a domain id (uuid) or null'],
      [fn.id, { url: HOOK_URL }, 'url: must not be set for a function endpoint'],
    ]
    for (const [id, body, message] of cases)
      expectError(await request('PATCH', `/v1/endpoints/${id}`, { key: org.key, body }), 400, 'validation_error', message)
    expect(expectOk(await request('GET', `/v1/endpoints/${e.id}`, { key: org.key }))).toEqual(e)
  })

  test('a domain that is not the organization’s is 404', async () => {
    const org = await createOrg()
    const e = await create(org.key, { url: HOOK_URL })
    expectError(await request('PATCH', `/v1/endpoints/${e.id}`, { key: org.key, body: { domain_id: randomId() } }), 404, 'not_found', 'domain: not found')
  })
})

describe('deactivate', () => {
  test('200 with the record and deactivated_at; then 404 for reads, updates and a second delete', async () => {
    const org = await createOrg()
    const e = await create(org.key, { url: HOOK_URL })
    const d = expectOk(await request('DELETE', `/v1/endpoints/${e.id}`, { key: org.key }))
    expect(Math.abs(Date.parse(d.deactivated_at) - Date.now())).toBeLessThan(60_000)
    expect(d).toEqual({ ...e, updated_at: d.deactivated_at, deactivated_at: d.deactivated_at })
    expectError(await request('GET', `/v1/endpoints/${e.id}`, { key: org.key }), 404, 'not_found', 'endpoint: not found')
    expectError(await request('PATCH', `/v1/endpoints/${e.id}`, { key: org.key, body: { enabled: false } }), 404, 'not_found')
    expectError(await request('DELETE', `/v1/endpoints/${e.id}`, { key: org.key }), 404, 'not_found')
    // the row stays for the delivery history
    const row = await findEndpoint(ctx.sql, org.orgId, e.id, { includeDeactivated: true })
    expect(row).toMatchObject({ id: e.id, url: HOOK_URL, deactivated_at: expect.any(Date) })
    expect(await findEndpoint(ctx.sql, org.orgId, e.id)).toBeNull()
  })

  test('a deactivated function endpoint frees the function: creating it again makes a new one', async () => {
    const org = await createOrg()
    const fn = randomId()
    const e = await create(org.key, { kind: 'function', function_id: fn })
    expectOk(await request('DELETE', `/v1/endpoints/${e.id}`, { key: org.key }))
    expect((await create(org.key, { kind: 'function', function_id: fn })).id).not.toBe(e.id)
  })
})

describe('another organization', () => {
  test('its endpoints are 404 for every operation; its domain is 404 on create and update', async () => {
    const owner = await createOrg()
    const intruder = await createOrg()
    const e = await create(owner.key, { url: HOOK_URL })
    const domain = await claimDomain(app, owner.key)
    expectError(await request('GET', `/v1/endpoints/${e.id}`, { key: intruder.key }), 404, 'not_found', 'endpoint: not found')
    expectError(await request('PATCH', `/v1/endpoints/${e.id}`, { key: intruder.key, body: { enabled: false } }), 404, 'not_found')
    expectError(await request('DELETE', `/v1/endpoints/${e.id}`, { key: intruder.key }), 404, 'not_found')
    expect(expectOk(await request('GET', '/v1/endpoints', { key: intruder.key }))).toEqual([])
    expectError(
      await request('POST', '/v1/endpoints', { key: intruder.key, body: { url: HOOK_URL, domain_id: domain.id } }),
      404,
      'not_found',
      'domain: not found',
    )
    const mine = await create(intruder.key, { url: HOOK_URL })
    expectError(
      await request('PATCH', `/v1/endpoints/${mine.id}`, { key: intruder.key, body: { domain_id: domain.id } }),
      404,
      'not_found',
      'domain: not found',
    )
    expect(expectOk(await request('GET', `/v1/endpoints/${e.id}`, { key: owner.key }))).toEqual(e)
  })
})
