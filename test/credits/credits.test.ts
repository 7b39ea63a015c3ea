/** Credit codes: redemption by owners and admins only, once per code, and Idempotency-Key. */
import { describe, expect, test } from 'bun:test'
import { mintCreditCode } from '../../src/credits/service'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { testDatabase } from '../helpers/database'

const { ctx, request } = await testApp()
const kind = (await testDatabase()).kind

const balance = async (orgId: string) => {
  const [row] = await ctx.sql<{ b: number }[]>`select credit_balance_cents::int as b from orgs where id = ${orgId}`
  return row!.b
}

describe('redeem', () => {
  test('an owner redeems a code: 200 with the new balance', async () => {
    const org = await createOrg({ role: 'owner' })
    const { code } = await mintCreditCode(ctx.sql, 500)
    const data = expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code } }))
    expect(data).toEqual({ redeemed_cents: 500, balance_cents: 500, currency: 'USD' })
    expect(expectOk(await request('GET', '/v1/credits', { key: org.key }))).toEqual({ balance_cents: 500, currency: 'USD' })
  })

  test('balances add up and surrounding whitespace is ignored', async () => {
    const org = await createOrg({ role: 'admin' })
    const a = await mintCreditCode(ctx.sql, 500)
    const b = await mintCreditCode(ctx.sql, 250)
    expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: a.code } }))
    const data = expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: `  ${b.code}\n` } }))
    expect(data).toEqual({ redeemed_cents: 250, balance_cents: 750, currency: 'USD' })
  })

  test('a member is 403 forbidden and the code stays usable', async () => {
    const member = await createOrg({ role: 'member' })
    const { code } = await mintCreditCode(ctx.sql, 500)
    expectError(await request('POST', '/v1/credits/redeem', { key: member.key, body: { code } }), 403, 'forbidden')
    expectError(await request('GET', '/v1/credits', { key: member.key }), 403, 'forbidden')
    expect(await balance(member.orgId)).toBe(0)
    const owner = await createOrg({ role: 'owner' })
    expectOk(await request('POST', '/v1/credits/redeem', { key: owner.key, body: { code } }))
  })

  test("the creator's current role counts, not the role when the key was made", async () => {
    const org = await createOrg({ role: 'owner' })
    await ctx.sql`update memberships set role = 'member' where org_id = ${org.orgId} and user_id = ${org.userId}`
    const { code } = await mintCreditCode(ctx.sql, 100)
    expectError(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code } }), 403, 'forbidden')
  })

  test('a key without a person (agent account) is 403', async () => {
    const created = expectOk(await request('POST', '/v1/agent/accounts', { body: { terms_accepted: true } }), 201)
    const { code } = await mintCreditCode(ctx.sql, 100)
    expectError(await request('POST', '/v1/credits/redeem', { key: created.api_key, body: { code } }), 403, 'forbidden')
  })

  test('a used code is 404 and credits nothing more', async () => {
    const org = await createOrg()
    const other = await createOrg()
    const { code } = await mintCreditCode(ctx.sql, 500)
    expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code } }))
    expectError(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code } }), 404, 'not_found')
    expectError(await request('POST', '/v1/credits/redeem', { key: other.key, body: { code } }), 404, 'not_found')
    expect(await balance(org.orgId)).toBe(500)
    expect(await balance(other.orgId)).toBe(0)
  })

  test('an unknown code is 404', async () => {
    const org = await createOrg()
    expectError(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: 'CR-not-a-real-code' } }), 404, 'not_found')
  })

  test('the same code redeemed concurrently by two organizations credits one', async () => {
    const orgs = await Promise.all([createOrg(), createOrg(), createOrg()])
    const { code } = await mintCreditCode(ctx.sql, 500)
    const results = await Promise.all(orgs.map(o => request('POST', '/v1/credits/redeem', { key: o.key, body: { code } })))
    expect(results.map(r => r.status).sort()).toEqual([200, 404, 404])
    const balances = await Promise.all(orgs.map(o => balance(o.orgId)))
    expect(balances.sort()).toEqual([0, 0, 500])
  })

  test('body validation', async () => {
    const org = await createOrg()
    expectError(await request('POST', '/v1/credits/redeem', { key: org.key, body: {} }), 400, 'validation_error', 'code: is required')
    expectError(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: '' } }), 400, 'validation_error', 'code: must not be empty')
  })
})

describe('Idempotency-Key on redeem', () => {
  test('same key and body: the original response is replayed and the balance credited once', async () => {
    const org = await createOrg()
    const { code } = await mintCreditCode(ctx.sql, 500)
    const headers = { 'idempotency-key': 'redeem-1' }
    const first = await request('POST', '/v1/credits/redeem', { key: org.key, body: { code }, headers })
    const data = expectOk(first)
    expect(first.headers.get('idempotency-key')).toBe('redeem-1')
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const second = await request('POST', '/v1/credits/redeem', { key: org.key, body: { code }, headers })
    expect(second.status).toBe(200)
    expect(second.body).toEqual(first.body)
    expect(expectOk(second)).toEqual(data)
    expect(second.headers.get('idempotent-replayed')).toBe('true')
    expect(second.headers.get('idempotency-key')).toBe('redeem-1')
    expect(await balance(org.orgId)).toBe(500)
  })

  test('body key order does not matter for the replay', async () => {
    const org = await createOrg()
    const { code } = await mintCreditCode(ctx.sql, 100)
    const headers = { 'idempotency-key': 'order' }
    expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: `{"code":"${code}"}`, headers }))
    const again = await request('POST', '/v1/credits/redeem', { key: org.key, body: ` { "code" : "${code}" } `, headers })
    expect(again.headers.get('idempotent-replayed')).toBe('true')
  })

  test('same key, different body: 409 conflict idempotency_key_reused', async () => {
    const org = await createOrg()
    const a = await mintCreditCode(ctx.sql, 500)
    const b = await mintCreditCode(ctx.sql, 300)
    const headers = { 'idempotency-key': 'redeem-2' }
    expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: a.code }, headers }))
    const res = await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: b.code }, headers })
    expectError(res, 409, 'conflict')
    expect(res.body.error.details.reason).toBe('idempotency_key_reused')
    expect(await balance(org.orgId)).toBe(500)
    // the second code was not spent
    expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: b.code } }))
  })

  test('keys are scoped to the organization', async () => {
    const one = await createOrg()
    const two = await createOrg()
    const a = await mintCreditCode(ctx.sql, 100)
    const b = await mintCreditCode(ctx.sql, 200)
    const headers = { 'idempotency-key': 'shared-key' }
    expectOk(await request('POST', '/v1/credits/redeem', { key: one.key, body: { code: a.code }, headers }))
    const res = await request('POST', '/v1/credits/redeem', { key: two.key, body: { code: b.code }, headers })
    expect(expectOk(res)).toEqual({ redeemed_cents: 200, balance_cents: 200, currency: 'USD' })
    expect(res.headers.get('idempotent-replayed')).toBeNull()
  })

  test('a failed request is not recorded: the retry runs again', async () => {
    const org = await createOrg()
    const headers = { 'idempotency-key': 'after-failure' }
    expectError(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: 'CR-unknown' }, headers }), 404, 'not_found')
    expectError(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code: 'CR-unknown' }, headers }), 404, 'not_found')
  })

  test('key length: 255 accepted, 256 and empty rejected', async () => {
    const org = await createOrg()
    const { code } = await mintCreditCode(ctx.sql, 100)
    const long = await request('POST', '/v1/credits/redeem', { key: org.key, body: { code }, headers: { 'idempotency-key': 'k'.repeat(256) } })
    expectError(long, 400, 'validation_error', /^Idempotency-Key: /)
    expect(await balance(org.orgId)).toBe(0)
    expectOk(await request('POST', '/v1/credits/redeem', { key: org.key, body: { code }, headers: { 'idempotency-key': 'k'.repeat(255) } }))
  })

  test.skipIf(kind === 'pglite')('a duplicate while the first is still running: 409 idempotency_request_in_progress', async () => {
    const org = await createOrg()
    const { code } = await mintCreditCode(ctx.sql, 500)
    const headers = { 'idempotency-key': 'race' }

    let release!: () => void
    const released = new Promise<void>(r => (release = r))
    let lockHeld!: () => void
    const held = new Promise<void>(r => (lockHeld = r))
    const holder = ctx.sql.begin(async tx => {
      await tx`select 1 from orgs where id = ${org.orgId} for update`
      lockHeld()
      await released
    })
    await held
    try {
      const first = request('POST', '/v1/credits/redeem', { key: org.key, body: { code }, headers })
      // wait until the first request is blocked on the org row (its foreign-key check or the
      // balance update), inside its transaction and so holding the idempotency lock
      const deadline = Date.now() + 3_000
      for (;;) {
        const [row] = await ctx.sql<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock' and query ilike '%credit%'`
        if (row!.n > 0) break
        if (Date.now() > deadline) throw new Error('the first redeem never blocked')
        await Bun.sleep(10)
      }
      const second = await request('POST', '/v1/credits/redeem', { key: org.key, body: { code }, headers })
      expectError(second, 409, 'conflict')
      expect(second.body.error.details.reason).toBe('idempotency_request_in_progress')

      release()
      await holder
      const done = await first
      expect(expectOk(done)).toEqual({ redeemed_cents: 500, balance_cents: 500, currency: 'USD' })
      expect(await balance(org.orgId)).toBe(500)
      // and now the key replays
      const third = await request('POST', '/v1/credits/redeem', { key: org.key, body: { code }, headers })
      expect(third.headers.get('idempotent-replayed')).toBe('true')
      expect(third.body).toEqual(done.body)
    } finally {
      release()
      await holder.catch(() => {})
    }
  })
})

describe('GET /v1/credits', () => {
  test('a new organization has a zero balance', async () => {
    const org = await createOrg()
    expect(expectOk(await request('GET', '/v1/credits', { key: org.key }))).toEqual({ balance_cents: 0, currency: 'USD' })
  })
})
