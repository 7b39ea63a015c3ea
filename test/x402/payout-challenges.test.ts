/**
 * Payout addresses (EIP-191 statements signed with viem's own personal_sign) and challenges:
 * the entitlement gate, owner-only writes, the statement's bindings, Idempotency-Key, the
 * challenge's requirements and nonce binding.
 */
import { describe, expect, test } from 'bun:test'
import { decodeAbiParameters, encodeAbiParameters, getAddress, keccak256 } from 'viem'
import { createOrg, testApp, testSql } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { payoutStatement } from '../../src/x402/payout.service'
import { createChallenge } from '../../src/x402/challenges.service'
import { keyOf, newChallenge, registerPayout, wallet, x402Org } from './helpers'

const t = await testApp()

describe('entitlement gate', () => {
  test('an organization without x402_payments gets 403 feature_disabled with details, on every route', async () => {
    const org = await createOrg({ plan: 'developer' })
    for (const [method, path] of [
      ['GET', '/v1/x402/payout-addresses'],
      ['POST', '/v1/x402/payout-addresses'],
      ['POST', '/v1/x402/challenges'],
      ['GET', `/v1/x402/challenges/${crypto.randomUUID()}`],
    ] as const) {
      const res = await t.request(method, path, { key: org.key, body: method === 'POST' ? {} : undefined })
      expectError(res, 403, 'feature_disabled')
      expect(res.body.error.details).toMatchObject({ missing_entitlement: 'x402_payments', docs_url: expect.any(String), message: expect.any(String) })
    }
  })

  test('without credentials: 401 before anything else', async () => {
    expectError(await t.request('GET', '/v1/x402/payout-addresses'), 401, 'unauthorized')
  })
})

describe('payout addresses', () => {
  test('the offered statement, signed by the wallet, registers it as the default; a second one takes over', async () => {
    const org = await x402Org()
    const first = wallet()
    const a = await registerPayout(t, org, first)
    expect(a).toMatchObject({ network: 'base-sepolia', address: first.address, is_default: true })
    const second = wallet()
    await registerPayout(t, org, second)
    const list = expectOk(await t.request('GET', '/v1/x402/payout-addresses', { key: org.key }))
    expect(list.map((r: any) => [r.address, r.is_default])).toEqual([
      [second.address, true],
      [first.address, false],
    ])
    // registering the first again makes it the default again
    await registerPayout(t, org, first)
    const again = expectOk(await t.request('GET', '/v1/x402/payout-addresses', { key: org.key }))
    expect(again.filter((r: any) => r.is_default).map((r: any) => r.address)).toEqual([first.address])
  })

  test('the statement text is exactly the documented one', async () => {
    const org = await x402Org()
    const w = wallet()
    const s = expectOk(await t.request('GET', `/v1/x402/payout-addresses/message?network=base&address=${w.address.toLowerCase()}`, { key: org.key }))
    expect(s.message).toBe(`Register x402 payout address\norganization: ${org.orgId}\nnetwork: base\naddress: ${w.address}\nissued_at: ${s.issued_at}`)
    expect(Date.parse(s.expires_at) - Date.parse(s.issued_at)).toBe(600_000)
  })

  test('refused: another signer, another org, another network, another address, a stale or edited statement', async () => {
    const org = await x402Org()
    const other = await x402Org()
    const w = wallet()
    const post = (body: Record<string, unknown>) =>
      t.request('POST', '/v1/x402/payout-addresses', { key: org.key, body: { network: 'base-sepolia', address: w.address, ...body } })
    const now = new Date()
    const good = payoutStatement(org.orgId, 'base-sepolia', w.address, now)
    expectError(await post({ message: good, signature: await wallet().signMessage({ message: good }) }), 400, 'validation_error', /^signature: recovers to 0x/)
    const foreign = payoutStatement(other.orgId, 'base-sepolia', w.address, now)
    expectError(
      await post({ message: foreign, signature: await w.signMessage({ message: foreign }) }),
      400,
      'validation_error',
      'message: names another organization',
    )
    const base = payoutStatement(org.orgId, 'base', w.address, now)
    expectError(
      await post({ message: base, signature: await w.signMessage({ message: base }) }),
      400,
      'validation_error',
      'message: names network base, not base-sepolia',
    )
    const elsewhere = payoutStatement(org.orgId, 'base-sepolia', wallet().address, now)
    expectError(
      await post({ message: elsewhere, signature: await w.signMessage({ message: elsewhere }) }),
      400,
      'validation_error',
      'message: names another address',
    )
    const stale = payoutStatement(org.orgId, 'base-sepolia', w.address, new Date(Date.now() - 601_000))
    expectError(
      await post({ message: stale, signature: await w.signMessage({ message: stale }) }),
      400,
      'validation_error',
      /^message: was issued more than 10 minutes ago/,
    )
    const edited = good + '\n'
    expectError(
      await post({ message: edited, signature: await w.signMessage({ message: edited }) }),
      400,
      'validation_error',
      /^message: must be the statement/,
    )
    expectError(await post({ message: good, signature: '0x1234' }), 400, 'validation_error', /^signature: /)
    expectError(await post({ message: good, signature: '0x' + '00'.repeat(65) }), 400, 'validation_error', /^signature: /)
    expectError(await post({ address: 'nope', message: good, signature: '0x' }), 400, 'validation_error', /^address: /)
    expectError(await post({ network: 'ethereum', message: good, signature: '0x' }), 400, 'validation_error', /^network: /)
    expect(expectOk(await t.request('GET', '/v1/x402/payout-addresses', { key: org.key }))).toEqual([])
  })

  test('owner or admin only: a member key or a key without a creator gets 403; any member lists', async () => {
    const org = await x402Org()
    const w = wallet()
    const message = payoutStatement(org.orgId, 'base-sepolia', w.address, new Date())
    const body = { network: 'base-sepolia', address: w.address, message, signature: await w.signMessage({ message }) }
    for (const key of [await keyOf(org, 'member'), await keyOf(org, null)]) {
      expectError(await t.request('POST', '/v1/x402/payout-addresses', { key, body }), 403, 'forbidden')
      expectOk(await t.request('GET', '/v1/x402/payout-addresses', { key }))
    }
    expectOk(await t.request('POST', '/v1/x402/payout-addresses', { key: await keyOf(org, 'admin'), body }), 201)
  })
})

describe('challenges', () => {
  test('pay_to is the default payout address; requirements, nonce binding and authorization nonce', async () => {
    const org = await x402Org()
    const w = wallet()
    await registerPayout(t, org, w)
    const c = await newChallenge(t, org, { amount: '250000', description: 'one report' })
    expect(c).toMatchObject({ status: 'pending', network: 'base-sepolia', amount: '250000', pay_to: w.address, settle_tx: null, failure_reason: null })
    expect(c.payment_requirements).toEqual({
      scheme: 'exact',
      network: 'base-sepolia',
      maxAmountRequired: '250000',
      payTo: w.address,
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      resource: `x402:challenge:${c.id}`,
      description: 'one report',
      mimeType: 'application/json',
      maxTimeoutSeconds: 300,
      extra: { name: 'USDC', version: '2' },
    })
    const { interaction_id, challenge_step_id, challenge_nonce } = c.nonce_binding
    expect(challenge_nonce).toMatch(/^[0-9a-f]{64}$/)
    expect(interaction_id).toBe(`${c.id}@api.test.local`)
    const encoded = encodeAbiParameters(
      [{ type: 'string' }, { type: 'string' }, { type: 'bytes32' }],
      [interaction_id, challenge_step_id, `0x${challenge_nonce}`],
    )
    expect(c.authorization_nonce).toBe(keccak256(encoded))
    expect(decodeAbiParameters([{ type: 'string' }], encoded)[0]).toBe(interaction_id)
    const expires = Date.parse(c.expires_at) - Date.now()
    expect(expires).toBeGreaterThan(290_000)
    expect(expires).toBeLessThanOrEqual(300_000)
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${c.id}`, { key: org.key }))).toEqual(c)
  })

  test('pay_url is the public page any x402 client pays at, and the OpenAPI document shows it', async () => {
    const org = await x402Org()
    await registerPayout(t, org, wallet())
    const c = await newChallenge(t, org, { amount: '1000' })
    expect(c.pay_url).toBe(`${t.ctx.config.PUBLIC_URL}/x402/pay/${c.id}`)
    const unpaid = await t.request('GET', new URL(c.pay_url).pathname)
    expect(unpaid.status).toBe(402)
    expect(unpaid.body.accepts[0].maxAmountRequired).toBe('1000')
    const doc = (await t.request('GET', '/v1/openapi')).body
    const created = doc.paths['/v1/x402/challenges/'] ?? doc.paths['/v1/x402/challenges']
    const schema = JSON.stringify(created.post.responses['201'])
    expect(schema).toContain('"pay_url"')
  })

  test('on base the asset is base USDC and the EIP-712 name is "USD Coin"', async () => {
    const org = await x402Org()
    await registerPayout(t, org, wallet(), 'base')
    const c = await newChallenge(t, org, { network: 'base', expires_in: 86400 })
    expect(c.payment_requirements.asset).toBe(getAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'))
    expect(c.payment_requirements.extra).toEqual({ name: 'USD Coin', version: '2' })
  })

  test('422 no_payout_address without a default for the network; pay_to is never an input', async () => {
    const org = await x402Org()
    await registerPayout(t, org, wallet(), 'base')
    expectError(await t.request('POST', '/v1/x402/challenges', { key: org.key, body: { amount: '1', network: 'base-sepolia' } }), 422, 'no_payout_address')
    expectError(
      await t.request('POST', '/v1/x402/challenges', { key: org.key, body: { amount: '1', network: 'base', pay_to: wallet().address } }),
      400,
      'validation_error',
      /^pay_to: /,
    )
  })

  test('validation: amount, expires_in bounds, description length', async () => {
    const org = await x402Org()
    await registerPayout(t, org, wallet())
    const post = (body: Record<string, unknown>) =>
      t.request('POST', '/v1/x402/challenges', { key: org.key, body: { amount: '1', network: 'base-sepolia', ...body } })
    for (const amount of ['0', '-1', '1.5', '', 'abc', 10]) expectError(await post({ amount }), 400, 'validation_error', /^amount: /)
    expectError(await post({ expires_in: 59 }), 400, 'validation_error', /^expires_in: /)
    expectError(await post({ expires_in: 86401 }), 400, 'validation_error', /^expires_in: /)
    expectError(await post({ description: 'x'.repeat(513) }), 400, 'validation_error', /^description: /)
    expectOk(await post({ expires_in: 60, description: 'x'.repeat(512) }), 201)
  })

  test('Idempotency-Key: a retry returns the original challenge; another payload is 409', async () => {
    const org = await x402Org()
    await registerPayout(t, org, wallet())
    const headers = { 'idempotency-key': `k-${crypto.randomUUID()}` }
    const body = { amount: '5000', network: 'base-sepolia' }
    const first = await t.request('POST', '/v1/x402/challenges', { key: org.key, body, headers })
    const again = await t.request('POST', '/v1/x402/challenges', { key: org.key, body, headers })
    expect(expectOk(again, 201)).toEqual(expectOk(first, 201))
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    const res = await t.request('POST', '/v1/x402/challenges', { key: org.key, body: { ...body, amount: '5001' }, headers })
    expectError(res, 409, 'conflict')
    expect(res.body.error.details.reason).toBe('idempotency_key_reused')
  })

  test("commitWithoutFlush (the API and MCP creates) turns synchronous_commit off for the challenge's transaction only; without it the commit waits", async () => {
    const org = await x402Org()
    await registerPayout(t, org, wallet())
    const sql = await testSql()
    const settingAfter = async (commitWithoutFlush: boolean) =>
      sql.begin(async tx => {
        await createChallenge(tx, org.orgId, { amount: '1000', network: 'base-sepolia' }, 'example.test', { commitWithoutFlush })
        const [row] = await tx<{ synchronous_commit: string }[]>`show synchronous_commit`
        return row!.synchronous_commit
      })
    expect(await settingAfter(true)).toBe('off')
    expect(await settingAfter(false)).toBe('on')
    // the setting ends with its transaction: the connection goes back to the pool as it was
    const conn = await sql.reserve()
    try {
      await createChallenge(conn, org.orgId, { amount: '1000', network: 'base-sepolia' }, 'example.test', { commitWithoutFlush: true })
      const [row] = await conn<{ synchronous_commit: string }[]>`show synchronous_commit`
      expect(row!.synchronous_commit).toBe('on')
    } finally {
      conn.release()
    }
  })

  test("another organization's challenge is 404", async () => {
    const org = await x402Org()
    await registerPayout(t, org, wallet())
    const c = await newChallenge(t, org)
    const other = await x402Org()
    expectError(await t.request('GET', `/v1/x402/challenges/${c.id}`, { key: other.key }), 404, 'not_found')
    expectError(await t.request('GET', `/v1/x402/challenges/not-a-uuid`, { key: other.key }), 400, 'validation_error', /^id: /)
  })
})
