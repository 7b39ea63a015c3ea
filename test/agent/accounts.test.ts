/** POST /v1/agent/accounts: zero-touch signup returning an API key and a managed inbox. */
import { describe, expect, test } from 'bun:test'
import { testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'

const { ctx, request } = await testApp()
let ipSeq = 0
const freshIp = () => `192.0.2.${++ipSeq}`

describe('create', () => {
  test('terms_accepted true: 201, svc_ key, managed inbox, agent plan, no-store', async () => {
    const res = await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, ip: freshIp() })
    const data = expectOk(res, 201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(Object.keys(data).sort()).toEqual(['api_key', 'inbox', 'key_id', 'org_id', 'plan'])
    expect(data.plan).toBe('agent')
    expect(data.api_key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/)
    expect(data.inbox.address).toMatch(/^[a-z0-9.-]+@agents\.test\.local$/)
    expect(data.inbox.address.endsWith('@agents.test.local')).toBe(true)
    expect(data.inbox.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(Date.parse(data.inbox.created_at)).not.toBeNaN()

    const me = expectOk(await request('GET', '/v1/whoami', { key: data.api_key }))
    expect(me).toMatchObject({ org_id: data.org_id, user_id: null, role: 'member', auth_method: 'api_key', key_id: data.key_id })
    const account = expectOk(await request('GET', '/v1/account', { key: data.api_key }))
    expect(account.plan).toBe('agent')
    expect(account.limits.api_per_minute).toBe(120)

    const [inbox] = await ctx.sql`select org_id from managed_inboxes where address = ${data.inbox.address}`
    expect(inbox!.org_id).toBe(data.org_id)
  })

  test('each call creates a separate account and address', async () => {
    const ip = freshIp()
    const a = expectOk(await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, ip }), 201)
    const b = expectOk(await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, ip }), 201)
    expect(a.org_id).not.toBe(b.org_id)
    expect(a.inbox.address).not.toBe(b.inbox.address)
    expect(a.api_key).not.toBe(b.api_key)
  })

  test('terms_accepted false, missing, or not a boolean: 400 naming terms_accepted, nothing created', async () => {
    const [before] = await ctx.sql`select count(*)::int as n from orgs`
    for (const body of [{ terms_accepted: false }, {}, { terms_accepted: 'true' }, { terms_accepted: 1 }]) {
      expectError(await request('POST', '/v1/agent/accounts', { body, ip: freshIp() }), 400, 'validation_error', /^terms_accepted: /)
    }
    expectError(
      await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true, plan: 'platinum' }, ip: freshIp() }),
      400,
      'validation_error',
      'plan: is not a known field',
    )
    const [after] = await ctx.sql`select count(*)::int as n from orgs`
    expect(after!.n).toBe(before!.n)
  })
})

describe('Idempotency-Key', () => {
  test('a replay from the same address returns the same account', async () => {
    const ip = freshIp()
    const headers = { 'idempotency-key': 'signup-1' }
    const first = await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, headers, ip })
    const a = expectOk(first, 201)
    expect(first.headers.get('idempotency-key')).toBe('signup-1')
    const second = await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, headers, ip })
    const b = expectOk(second, 201)
    expect(b).toEqual(a)
    expect(second.headers.get('idempotent-replayed')).toBe('true')
    expect(second.headers.get('cache-control')).toBe('no-store')
    const [count] = await ctx.sql`select count(*)::int as n from managed_inboxes where org_id = ${a.org_id}`
    expect(count!.n).toBe(1)
    // the replayed key is the working key of that account
    expect(expectOk(await request('GET', '/v1/whoami', { key: b.api_key })).org_id).toBe(a.org_id)
  })

  test('the same key from another address creates another account', async () => {
    const headers = { 'idempotency-key': 'signup-shared' }
    const a = expectOk(await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, headers, ip: freshIp() }), 201)
    const other = await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, headers, ip: freshIp() })
    const b = expectOk(other, 201)
    expect(b.org_id).not.toBe(a.org_id)
    expect(other.headers.get('idempotent-replayed')).toBeNull()
  })

  test('a stored response carrying a key is sealed at rest', async () => {
    const ip = freshIp()
    const a = expectOk(await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true }, headers: { 'idempotency-key': 'sealed' }, ip }), 201)
    const rows = await ctx.sql`select response_sealed from idempotency_keys where key = 'sealed'`
    expect(rows.length).toBeGreaterThan(0)
    for (const row of rows) expect(Buffer.from(row.response_sealed).toString('latin1')).not.toContain(a.api_key)
  })
})
