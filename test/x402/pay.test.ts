/**
 * Paying challenges on a real local chain: anvil with Circle's USDC at base-sepolia's canonical
 * address, payments signed with the x402 reference client, settled by the direct JSON-RPC
 * facilitator. Balances are read from the chain to check that money moved exactly once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { parseSignature, type Hex } from 'viem'
import { testApp, testSql, type TestApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { settleNow } from '../../src/x402/settle.service'
import { rememberChallenge } from '../../src/x402/pay.service'
import type { ChallengeRow } from '../../src/x402/challenge-queries'
import { anvilBinary, startChain, type Chain } from './anvil'
import { signPayment } from './payer'
import { newChallenge, registerPayout, settlementAfterPay, x402Org } from './helpers'
import { TOKEN_ABI } from '../../src/x402/token'
import { setSettleCaps } from '../../src/x402/caps'
import { until } from '../helpers/until'
import { testDatabase } from '../helpers/database'

// The embedded database serves one connection: settlements share it with everything else.
const onServer = (await testDatabase()).kind === 'postgres'

if (!anvilBinary()) console.warn('x402 chain tests skipped: the anvil binary of @foundry-rs/anvil-linux-amd64 could not be installed')

/** A JSON-RPC request body: one call, or a batch. */
type RpcBody = { id: number; method: string } | { id: number; method: string }[]

describe.skipIf(!anvilBinary())('pay and settle on anvil (base-sepolia)', () => {
  let chain: Chain
  let t: TestApp
  const sql = testSql()

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    t = await testApp({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
  })
  afterAll(() => chain?.stop())

  /** A payee with a payout wallet and a challenge, and a funded payer organization with its wallet key. */
  async function setup(amount = '10000', fund = 1_000_000n) {
    const payee = await x402Org()
    const payeeWallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, payeeWallet)
    const challenge = await newChallenge(t, payee, { amount })
    const payer = await x402Org()
    const payerKey = generatePrivateKey()
    const payerAddress = privateKeyToAccount(payerKey).address
    if (fund) await chain.mint(payerAddress, fund)
    return { payee, payeeWallet, challenge, payer, payerKey, payerAddress }
  }

  const pay = (key: string, id: string, payment: unknown) => t.request('POST', `/v1/x402/challenges/${id}/pay`, { key, body: { payment } })

  test('a payment signed by the x402 client settles on chain; the receipt and the challenge carry the transaction', async () => {
    const s = await setup('250000')
    const payment = await signPayment(s.payerKey, s.challenge)
    const receipt = expectOk(await pay(s.payer.key, s.challenge.id, payment))
    expect(receipt).toMatchObject({
      challenge_id: s.challenge.id,
      status: 'settled',
      network: 'base-sepolia',
      amount: '250000',
      pay_to: s.payeeWallet.address,
      payer: s.payerAddress.toLowerCase(),
    })
    expect(receipt.settle_tx).toMatch(/^0x[0-9a-f]{64}$/)
    const onChain = await chain.client.getTransactionReceipt({ hash: receipt.settle_tx })
    expect(onChain.status).toBe('success')
    expect(await chain.balance(s.payeeWallet.address)).toBe(250000n)
    expect(await chain.balance(s.payerAddress)).toBe(750000n)
    const c = expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key }))
    expect(c).toMatchObject({ status: 'settled', settle_tx: receipt.settle_tx })
    // one attempt, the settle job written with the claim deleted by the record, the settlement's lock released
    expect(await settlementAfterPay(s.challenge.id)).toEqual({ attempts: 1, jobs: 0, lockFree: true })
    // paying again returns the original receipt, and nothing moves
    expect(expectOk(await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge)))).toEqual(receipt)
    expect(await chain.balance(s.payeeWallet.address)).toBe(250000n)
  })

  test('concurrent pays of one challenge settle once: the same receipt or 409, one transfer by balance', async () => {
    const s = await setup('30000')
    const payments = await Promise.all(Array.from({ length: 6 }, () => signPayment(s.payerKey, s.challenge)))
    const results = await Promise.all(payments.map(p => pay(s.payer.key, s.challenge.id, p)))
    const ok = results.filter(r => r.status === 200)
    expect(ok.length).toBeGreaterThanOrEqual(1)
    for (const r of results) if (r.status !== 200) expectError(r, 409, 'conflict')
    expect(new Set(ok.map(r => r.body.data.settle_tx)).size).toBe(1)
    expect(await chain.balance(s.payeeWallet.address)).toBe(30000n)
    expect(await chain.balance(s.payerAddress)).toBe(970000n)
  })

  test('concurrent payments of different challenges all settle from the one settler key (distinct transaction nonces)', async () => {
    const payee = await x402Org()
    const payeeWallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, payeeWallet)
    const payer = await x402Org()
    const runs = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const key = generatePrivateKey()
        await chain.mint(privateKeyToAccount(key).address, 5000n)
        return { key, challenge: await newChallenge(t, payee, { amount: '5000' }) }
      }),
    )
    const results = await Promise.all(runs.map(async r => pay(payer.key, r.challenge.id, await signPayment(r.key, r.challenge))))
    for (const r of results) expectOk(r)
    expect(new Set(results.map(r => r.body.data.settle_tx)).size).toBe(10)
    expect(await chain.balance(payeeWallet.address)).toBe(50000n)
  })

  test('concurrent payments near the caps: decided at once on the same totals, only those within the caps settle, the rest are refused', async () => {
    const db = await sql
    /** `n` payments of 5000 to a new payee at once, each from a wallet of its own, by `payer`; their outcomes and the payee. */
    const atOnce = async (n: number, payer: Awaited<ReturnType<typeof x402Org>>, payeeCaps?: { daily: string }) => {
      const payee = await x402Org()
      const wallet = privateKeyToAccount(generatePrivateKey())
      await registerPayout(t, payee, wallet)
      if (payeeCaps) await setSettleCaps(db, payee.orgId, { ...payeeCaps, monthly: 'default', per_settle: 'default' })
      const runs = await Promise.all(
        Array.from({ length: n }, async () => {
          const key = generatePrivateKey()
          await chain.mint(privateKeyToAccount(key).address, 5000n)
          return { key, challenge: await newChallenge(t, payee, { amount: '5000' }) }
        }),
      )
      const results = await Promise.all(runs.map(async r => pay(payer.key, r.challenge.id, await signPayment(r.key, r.challenge))))
      return { payee, wallet, outcomes: results.map(r => (r.status === 200 ? 'settled' : r.body.error.details.reasons.join())).sort() }
    }
    const total = async (org: string, direction: string) =>
      (await db<{ amount: string }[]>`select amount::text from x402_totals where org_id = ${org} and direction = ${direction} and span = 'day'`)[0]!.amount

    // the payee's daily cap of 25000: five settle
    const capped = await atOnce(7, await x402Org(), { daily: '25000' })
    expect(capped.outcomes).toEqual(['settle_daily_cap_exceeded', 'settle_daily_cap_exceeded', 'settled', 'settled', 'settled', 'settled', 'settled'])
    expect(await chain.balance(capped.wallet.address)).toBe(25000n)
    expect(await total(capped.payee.orgId, 'received')).toBe('25000')

    // the payer's daily cap of 15000: three settle, the others are declined and stay pending
    const payer = await x402Org()
    expectOk(await t.request('PUT', '/v1/x402/spend-policy', { key: payer.key, body: { daily_cap: '15000' } }))
    const declined = await atOnce(5, payer)
    expect(declined.outcomes).toEqual(['daily_cap', 'daily_cap', 'settled', 'settled', 'settled'])
    expect(await chain.balance(declined.wallet.address)).toBe(15000n)
    expect(await total(payer.orgId, 'sent')).toBe('15000')
  })

  test('every verification reason, several at once, and nothing moves', async () => {
    const s = await setup('10000')
    const now = Math.floor(Date.now() / 1000)
    const other = privateKeyToAccount(generatePrivateKey())
    const cases: [string[], (a: Record<string, string>, r: any) => void][] = [
      [['amount_mismatch'], a => void (a.value = '9999')],
      [['verify_non_positive_amount'], a => void (a.value = '0')],
      [['payto_mismatch'], a => void (a.to = other.address)],
      [['nonce_mismatch'], a => void (a.nonce = `0x${'ab'.repeat(32)}`)],
      [['window_too_wide'], a => void (a.validBefore = String(Number(a.validAfter) + 86_401))],
      [['insufficient_headroom'], a => void (a.validBefore = String(now + 30))],
      [['not_yet_valid'], a => void (a.validAfter = String(now + 120))],
      [['degenerate_window', 'insufficient_headroom'], a => void ((a.validAfter = String(now - 10)), (a.validBefore = String(now - 20)))],
      [['amount_mismatch', 'payto_mismatch', 'nonce_mismatch'], a => void ((a.value = '1'), (a.to = other.address), (a.nonce = `0x${'01'.repeat(32)}`))],
      // signed over the other network's EIP-712 name: recovers to someone else
      [['signer_mismatch'], (_a, r) => void (r.extra = { name: 'USD Coin', version: '2' })],
    ]
    for (const [reasons, edit] of cases) {
      const res = await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge, edit))
      expectError(res, 422, 'payment_verification_failed')
      expect(res.body.error.details.failure_category).toBe('verification')
      expect(res.body.error.details.reasons.toSorted()).toEqual(reasons.toSorted())
    }
    const good = await signPayment(s.payerKey, s.challenge)
    const variants: [string[], unknown][] = [
      [['signer_mismatch'], { ...good, payload: { ...good.payload, authorization: { ...good.payload.authorization, from: other.address } } }],
      [['invalid_to_address'], { ...good, payload: { ...good.payload, authorization: { ...good.payload.authorization, to: '0x1234' } } }],
      [['invalid_from_address'], { ...good, payload: { ...good.payload, authorization: { ...good.payload.authorization, from: 'nobody' } } }],
      [['unsupported_network'], { ...good, network: 'base' }],
      [['unsupported_network'], { ...good, network: 'ethereum' }],
      [['malformed_payload'], { ...good, x402Version: 2 }],
      [['malformed_payload'], { ...good, payload: { ...good.payload, signature: '0x12' } }],
      [['malformed_payload'], { ...good, payload: { ...good.payload, authorization: { ...good.payload.authorization, value: '1e6' } } }],
      [['malformed_payload'], 'not an object'],
      [['signature_unrecoverable'], { ...good, payload: { ...good.payload, signature: `0x${'00'.repeat(64)}1b` } }],
    ]
    for (const [reasons, payment] of variants) {
      const res = await pay(s.payer.key, s.challenge.id, payment)
      expectError(res, 422, 'payment_verification_failed')
      expect(res.body.error.details.reasons.toSorted()).toEqual(reasons.toSorted())
    }
    // the payee paying itself from its payout wallet: self_send (and the signature is still checked)
    const selfPay = await signPayment(generatePrivateKey(), s.challenge, a => void (a.from = s.payeeWallet.address))
    expect((await pay(s.payer.key, s.challenge.id, selfPay)).body.error.details.reasons.toSorted()).toEqual(['self_send', 'signer_mismatch'])
    expect(await chain.balance(s.payeeWallet.address)).toBe(0n)
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key })).status).toBe('pending')
    // and the right payment still settles afterwards
    expectOk(await pay(s.payer.key, s.challenge.id, good))
  })

  test('422 challenge_expired after expiry; 404 for an unknown challenge', async () => {
    const s = await setup('10000')
    const payment = await signPayment(s.payerKey, s.challenge)
    await (await sql)`update x402_challenges set expires_at = now() - interval '1 second' where id = ${s.challenge.id}`
    const res = await pay(s.payer.key, s.challenge.id, payment)
    expectError(res, 422, 'challenge_expired')
    expect(res.body.error.details).toEqual({ reasons: ['challenge_expired'], failure_category: 'settlement' })
    expectError(await pay(s.payer.key, crypto.randomUUID(), payment), 404, 'not_found')
  })

  test('a challenge kept by this process whose row is gone (its creation rolled back) is 404 when paid, and nothing moves', async () => {
    const s = await setup('10000')
    const [row] = await (await sql)<ChallengeRow[]>`select *, amount::text as amount from x402_challenges where id = ${s.challenge.id}`
    const ghost = { ...row!, id: crypto.randomUUID() }
    rememberChallenge(t.ctx, ghost)
    expectError(await pay(s.payer.key, ghost.id, await signPayment(s.payerKey, { ...s.challenge, id: ghost.id })), 404, 'not_found')
    expect(await chain.balance(s.payerAddress)).toBe(1_000_000n)
  })

  test('insufficient funds: 502 settlement_failed, permanent (no Retry-After), the challenge fails', async () => {
    const s = await setup('10000', 5000n)
    const res = await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge))
    expectError(res, 502, 'settlement_failed')
    expect(res.body.error.details).toEqual({ reasons: ['insufficient_funds'], failure_category: 'settlement' })
    expect(res.headers.get('retry-after')).toBeNull()
    const c = expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key }))
    expect(c).toMatchObject({ status: 'failed', failure_reason: 'insufficient_funds', failure_category: 'settlement' })
    expect(await chain.balance(s.payerAddress)).toBe(5000n)
    // a failure is final: no job left to retry it
    expect(await settlementAfterPay(s.challenge.id)).toEqual({ attempts: 1, jobs: 0, lockFree: true })
  })

  test('a front-run of exactly this authorization settles the challenge with that transaction; another transfer on the nonce fails it', async () => {
    const s = await setup('10000')
    const payment = await signPayment(s.payerKey, s.challenge)
    const tx = await submitDirectly(payment)
    const receipt = expectOk(await pay(s.payer.key, s.challenge.id, payment))
    expect(receipt.settle_tx).toBe(tx)
    expect(await chain.balance(s.payeeWallet.address)).toBe(10000n)

    // the payer spends the bound nonce on another transfer first: the challenge's authorization can never settle
    const s2 = await setup('10000')
    const elsewhere = privateKeyToAccount(generatePrivateKey()).address
    await submitDirectly(await signPayment(s2.payerKey, s2.challenge, a => void (a.to = elsewhere)))
    const res = await pay(s2.payer.key, s2.challenge.id, await signPayment(s2.payerKey, s2.challenge))
    expectError(res, 502, 'settlement_failed')
    expect(res.body.error.details.reasons).toEqual(['authorization_already_used'])
    expect(await chain.balance(s2.payeeWallet.address)).toBe(0n)
  })

  test('facilitator down: 502 facilitator_unavailable with Retry-After, challenge pending; the settle job finishes it later, once', async () => {
    const s = await setup('20000')
    const down = await testApp({ X402_RPC_URL_BASE_SEPOLIA: 'http://127.0.0.1:9', X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
    const payment = await signPayment(s.payerKey, s.challenge)
    const res = await down.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, { key: s.payer.key, body: { payment } })
    expectError(res, 502, 'settlement_failed')
    expect(res.body.error.details).toEqual({ reasons: ['facilitator_unavailable'], failure_category: 'settlement' })
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key })).status).toBe('pending')
    // the attempt to be retried keeps its job, and releases its lock
    expect(await settlementAfterPay(s.challenge.id)).toEqual({ attempts: 1, jobs: 1, lockFree: true })
    // The settle job was written with the claim; run it as a worker would, with a working chain.
    const [job] = await (await sql)<{ payload: { settlement_id: string } }[]>`
      select j.payload from jobs j join x402_settlements x on x.id = (j.payload->>'settlement_id')::uuid where x.challenge_id = ${s.challenge.id} and j.kind = 'x402.settle'`
    expect(job).toBeDefined()
    const outcome = await settleNow(t.ctx, job!.payload.settlement_id)
    expect(outcome.status).toBe('settled')
    // a retry of the pay now returns that receipt
    expect(expectOk(await pay(s.payer.key, s.challenge.id, payment)).settle_tx).toBe((outcome as any).tx)
    expect(await chain.balance(s.payeeWallet.address)).toBe(20000n)
  })

  test('no settler key: 502 settlement_misconfigured (operator fault, no Retry-After), the challenge stays pending', async () => {
    const s = await setup('10000')
    const unkeyed = await testApp({ X402_RPC_URL_BASE_SEPOLIA: chain.url })
    const res = await unkeyed.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, {
      key: s.payer.key,
      body: { payment: await signPayment(s.payerKey, s.challenge) },
    })
    expectError(res, 502, 'settlement_failed')
    expect(res.body.error.details).toEqual({ reasons: ['settlement_misconfigured'], failure_category: 'settlement' })
    expect(res.headers.get('retry-after')).toBeNull()
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key })).status).toBe('pending')
    expect(await chain.balance(s.payerAddress)).toBe(1_000_000n)
  })

  test('a settler key without gas money: 502 settlement_misconfigured (operator fault, no Retry-After), the challenge stays pending, nothing moves', async () => {
    const s = await setup('10000')
    const broke = await testApp({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: generatePrivateKey() })
    const res = await broke.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, {
      key: s.payer.key,
      body: { payment: await signPayment(s.payerKey, s.challenge) },
    })
    expectError(res, 502, 'settlement_failed')
    expect(res.body.error.details).toEqual({ reasons: ['settlement_misconfigured'], failure_category: 'settlement' })
    expect(res.headers.get('retry-after')).toBeNull()
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key })).status).toBe('pending')
    expect(await chain.balance(s.payerAddress)).toBe(1_000_000n)
  })

  test('a crash after sending and before recording: the job reads the chain and records that transaction, without a second transfer', async () => {
    const s = await setup('15000')
    const down = await testApp({ X402_RPC_URL_BASE_SEPOLIA: 'http://127.0.0.1:9', X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
    const payment = await signPayment(s.payerKey, s.challenge)
    await down.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, { key: s.payer.key, body: { payment } })
    // "our" transaction went out before the crash
    const sent = await submitDirectly(payment)
    const [row] = await (await sql)<{ id: string }[]>`select id from x402_settlements where challenge_id = ${s.challenge.id}`
    const outcome = await settleNow(t.ctx, row!.id)
    expect(outcome).toMatchObject({ status: 'settled', tx: sent })
    expect(await chain.balance(s.payeeWallet.address)).toBe(15000n)
  })

  test('a challenge claimed by one payer (its settlement not completed) refuses another payer with payer_mismatch; the first still settles', async () => {
    const s = await setup('12000')
    const down = await testApp({ X402_RPC_URL_BASE_SEPOLIA: 'http://127.0.0.1:9', X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
    const first = await signPayment(s.payerKey, s.challenge)
    expectError(
      await down.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, { key: s.payer.key, body: { payment: first } }),
      502,
      'settlement_failed',
    )
    const otherKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(otherKey).address, 1_000_000n)
    const res = await pay(s.payer.key, s.challenge.id, await signPayment(otherKey, s.challenge))
    expectError(res, 422, 'payment_verification_failed')
    expect(res.body.error.details).toEqual({ reasons: ['payer_mismatch'], failure_category: 'verification' })
    // with other faults it is one reason among several
    const both = await pay(s.payer.key, s.challenge.id, await signPayment(otherKey, s.challenge, a => void (a.value = '1')))
    expect(both.body.error.details.reasons.toSorted()).toEqual(['amount_mismatch', 'payer_mismatch'])
    expect(await chain.balance(privateKeyToAccount(otherKey).address)).toBe(1_000_000n)
    // the claimed payer's fresh signature of the same authorization settles it
    expect(expectOk(await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge)))).toMatchObject({
      status: 'settled',
      payer: s.payerAddress.toLowerCase(),
    })
    expect(await chain.balance(s.payeeWallet.address)).toBe(12000n)
  })

  /** A JSON-RPC endpoint in front of anvil: `answer` answers a request itself, or leaves it (undefined) to anvil. */
  /** A JSON-RPC endpoint in front of anvil: `answer` may answer a request itself, `before` may hold it first. */
  function rpcProxy(answer: (body: RpcBody) => Response | undefined, before?: (body: RpcBody) => Promise<void>) {
    return Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        const body = (await request.json()) as RpcBody
        await before?.(body)
        return answer(body) ?? fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      },
    })
  }

  /** Pays a challenge of each amount through a service settling over `rpcUrl`; each transfer is on chain. */
  async function payThrough(rpcUrl: string, amounts: string[]) {
    const app = await testApp({ X402_RPC_URL_BASE_SEPOLIA: rpcUrl, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
    for (const amount of amounts) {
      const s = await setup(amount)
      const receipt = expectOk(
        await app.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, {
          key: s.payer.key,
          body: { payment: await signPayment(s.payerKey, s.challenge) },
        }),
      )
      expect((await chain.client.getTransactionReceipt({ hash: receipt.settle_tx })).status).toBe('success')
      expect(await chain.balance(s.payeeWallet.address)).toBe(BigInt(amount))
    }
  }

  test('an endpoint without eth_sendRawTransactionSync: the transaction is sent with eth_sendRawTransaction and its receipt polled', async () => {
    const methods: string[] = []
    const proxy = rpcProxy(body => {
      for (const call of [body].flat()) methods.push(call.method)
      if (!Array.isArray(body) && body.method === 'eth_sendRawTransactionSync') {
        return Response.json({
          jsonrpc: '2.0',
          id: body.id,
          error: { code: -32601, message: 'the method eth_sendRawTransactionSync does not exist/is not available' },
        })
      }
    })
    try {
      await payThrough(`http://127.0.0.1:${proxy.port}`, ['3000', '4000'])
      // asked once, then not again
      expect(methods.filter(m => m === 'eth_sendRawTransactionSync')).toHaveLength(1)
      expect(methods.filter(m => m === 'eth_sendRawTransaction')).toHaveLength(2)
    } finally {
      proxy.stop(true)
    }
  })

  test('an endpoint that refuses JSON-RPC batches: the reads before the send are made one by one, and the batch is not asked again', async () => {
    let batches = 0
    const methods: string[] = []
    const proxy = rpcProxy(body => {
      if (Array.isArray(body)) {
        batches++
        return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch requests are not supported' } }, { status: 400 })
      }
      methods.push(body.method)
    })
    try {
      await payThrough(`http://127.0.0.1:${proxy.port}`, ['5000', '6000'])
      expect(batches).toBe(1)
      // authorizationState and the simulation (eth_call each) and the pending count, for each payment
      expect(methods.filter(m => m === 'eth_call')).toHaveLength(4)
      expect(methods.filter(m => m === 'eth_getTransactionCount')).toHaveLength(2)
    } finally {
      proxy.stop(true)
    }
  })

  test('settle caps: over a cap the challenge fails with category cap and nothing moves', async () => {
    const s = await setup('10000001', 20_000_000n)
    const res = await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge))
    expectError(res, 422, 'settle_cap_exceeded')
    expect(res.body.error.details).toEqual({ reasons: ['amount_exceeds_per_settle_ceiling'], failure_category: 'cap' })
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key }))).toMatchObject({
      status: 'failed',
      failure_category: 'cap',
      reasons: ['amount_exceeds_per_settle_ceiling'],
    })
    // paying the failed challenge again answers the same failure
    expectError(await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge)), 422, 'settle_cap_exceeded')

    // operator caps: 15000 a day; the first 10000 settles, the next 10000 does not
    const d = await setup('10000')
    await setSettleCaps(await sql, d.payee.orgId, { daily: '15000', monthly: 'default', per_settle: 'default' })
    expectOk(await pay(d.payer.key, d.challenge.id, await signPayment(d.payerKey, d.challenge)))
    const second = await newChallenge(t, d.payee, { amount: '10000' })
    const refused = await pay(d.payer.key, second.id, await signPayment(d.payerKey, second))
    expectError(refused, 422, 'settle_cap_exceeded')
    expect(refused.body.error.details.reasons).toEqual(['settle_daily_cap_exceeded'])
    await setSettleCaps(await sql, d.payee.orgId, { daily: 'default', monthly: '15000', per_settle: 'default' })
    const third = await newChallenge(t, d.payee, { amount: '10000' })
    expect((await pay(d.payer.key, third.id, await signPayment(d.payerKey, third))).body.error.details.reasons).toEqual(['settle_monthly_cap_exceeded'])
    expect(await chain.balance(d.payeeWallet.address)).toBe(10000n)
  })

  test('the caps count settled and in-flight payments of the current UTC day and month, from running totals; a failed settlement stops counting', async () => {
    const d = await setup('10000', 0n)
    const db = await sql
    await setSettleCaps(db, d.payee.orgId, { daily: '25000', monthly: 'default', per_settle: 'default' })
    const totals = async () =>
      Object.fromEntries(
        (
          await db<{ key: string; amount: string }[]>`
          select direction || ':' || span || ':' || (case when start = date_trunc(span, now() at time zone 'utc')::date then 'now' else 'before' end) as key, amount::text
            from x402_totals where org_id in (${d.payee.orgId}, ${d.payer.orgId}) order by 1`
        ).map(r => [r.key, r.amount]),
      )
    // earlier periods do not count
    await db`
      insert into x402_totals (org_id, direction, span, start, amount)
      values (${d.payee.orgId}, 'received', 'day', (now() at time zone 'utc')::date - 1, 1000000), (${d.payer.orgId}, 'sent', 'day', (now() at time zone 'utc')::date - 1, 1000000)`
    // a payer without the funds: the settlement fails, and its amount is taken off again
    expectError(await pay(d.payer.key, d.challenge.id, await signPayment(d.payerKey, d.challenge)), 502, 'settlement_failed')
    expect(await totals()).toEqual({
      'received:day:before': '1000000',
      'received:day:now': '0',
      'received:month:now': '0',
      'sent:day:before': '1000000',
      'sent:day:now': '0',
    })
    await chain.mint(d.payerAddress, 1_000_000n)
    for (let i = 0; i < 2; i++) {
      const c = await newChallenge(t, d.payee, { amount: '10000' })
      expectOk(await pay(d.payer.key, c.id, await signPayment(d.payerKey, c)))
    }
    expect(await totals()).toEqual({
      'received:day:before': '1000000',
      'received:day:now': '20000',
      'received:month:now': '20000',
      'sent:day:before': '1000000',
      'sent:day:now': '20000',
    })
    const over = await newChallenge(t, d.payee, { amount: '10000' })
    expect((await pay(d.payer.key, over.id, await signPayment(d.payerKey, over))).body.error.details.reasons).toEqual(['settle_daily_cap_exceeded'])
    // a refused claim adds nothing
    expect((await totals())['received:day:now']).toBe('20000')
    expect(await chain.balance(d.payeeWallet.address)).toBe(20000n)
  })

  test.skipIf(!onServer)(
    'settlements waiting on the chain hold connections of their own pool: with more of them than the process pool has connections, other requests are answered',
    async () => {
      // a chain endpoint that holds every transaction until the test lets them through
      let held = 0
      let letThrough: () => void
      const released = new Promise<void>(resolve => (letThrough = resolve))
      const proxy = rpcProxy(
        () => undefined,
        async body => {
          if (!Array.isArray(body) && body.method === 'eth_sendRawTransactionSync') {
            held++
            await released
          }
        },
      )
      try {
        const app = await testApp({ X402_RPC_URL_BASE_SEPOLIA: `http://127.0.0.1:${proxy.port}`, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
        // twelve payments: more than the process pool's ten connections
        const runs = await Promise.all(Array.from({ length: 12 }, () => setup('1000')))
        const paying = runs.map(async s =>
          app.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, { key: s.payer.key, body: { payment: await signPayment(s.payerKey, s.challenge) } }),
        )
        // ten wait on the chain (the settlements' pool is ten), two for a connection of that pool
        await until(
          async () => held,
          n => n === 10,
        )
        // the process pool is free: a request that reads the database is answered meanwhile (which
        // ten of the twelve are held is up to the scheduler: this payee's may still wait for a
        // connection of the settlements' pool, and then has no row yet)
        const ledger = expectOk(await app.request('GET', '/v1/x402/payments', { key: runs[0]!.payee.key }))
        expect(ledger.every((row: { status: string }) => row.status === 'pending')).toBe(true)
        letThrough!()
        for (const res of await Promise.all(paying)) expectOk(res)
        expect(held).toBe(12)
      } finally {
        letThrough!()
        proxy.stop(true)
      }
    },
  )

  /** Sends the payer's authorization to the token directly from anvil's first account (a front-runner, or our settler before a crash). */
  async function submitDirectly(payment: any): Promise<Hex> {
    const a = payment.payload.authorization
    const { r, s, v } = parseSignature(payment.payload.signature)
    const hash = await chain.deployer.writeContract({
      address: chain.usdc,
      abi: TOKEN_ABI,
      functionName: 'transferWithAuthorization',
      args: [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, Number(v), r, s],
      chain: null,
    } as any)
    await chain.client.waitForTransactionReceipt({ hash })
    return hash
  }
})
