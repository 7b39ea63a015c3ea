/**
 * Any stock x402 client pays a challenge through `GET /x402/pay/{id}`, with no account here:
 * the unmodified `x402-fetch` (v1, X-PAYMENT) and `@x402/fetch` with `@x402/evm` (v2,
 * PAYMENT-REQUIRED / PAYMENT-SIGNATURE / PAYMENT-RESPONSE), against the service on a real port
 * and anvil with Circle's USDC at base-sepolia's address.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createSigner, decodeXPaymentResponse, wrapFetchWithPayment as wrapV1 } from 'x402-fetch'
import { decodePaymentResponseHeader, wrapFetchWithPayment as wrapV2, x402Client } from '@x402/fetch'
import { ExactEvmScheme, toClientEvmSigner } from '@x402/evm'
import { testApp, type TestApp } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { anvilBinary, startChain, type Chain } from './anvil'
import { newChallenge, registerPayout, x402Org } from './helpers'

describe.skipIf(!anvilBinary())('stock x402 clients on GET /x402/pay/{id}', () => {
  let chain: Chain
  let t: TestApp
  let server: ReturnType<typeof Bun.serve>
  let origin: string

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    t = await testApp({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
    server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: req => t.app.handle(req) })
    origin = `http://127.0.0.1:${server.port}`
  })
  afterAll(() => {
    server?.stop(true)
    chain?.stop()
  })

  async function setup(amount = '50000') {
    const payee = await x402Org()
    const payeeWallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, payeeWallet)
    const challenge = await newChallenge(t, payee, { amount })
    const key = generatePrivateKey()
    await chain.mint(privateKeyToAccount(key).address, 1_000_000n)
    return { payee, payeeWallet, challenge, key, address: privateKeyToAccount(key).address }
  }

  test('without a payment: 402 with the v1 body and the v2 PAYMENT-REQUIRED header', async () => {
    const s = await setup()
    const res = await fetch(`${origin}/x402/pay/${s.challenge.id}`)
    expect(res.status).toBe(402)
    const body = (await res.json()) as any
    expect(body).toEqual({ x402Version: 1, error: expect.any(String), accepts: [s.challenge.payment_requirements] })
    const v2 = JSON.parse(Buffer.from(res.headers.get('payment-required')!, 'base64').toString())
    expect(v2).toMatchObject({
      x402Version: 2,
      resource: { url: `http://api.test.local/x402/pay/${s.challenge.id}`, mimeType: 'application/json' },
      accepts: [
        {
          scheme: 'exact',
          network: 'eip155:84532',
          amount: '50000',
          asset: s.challenge.asset,
          payTo: s.payeeWallet.address,
          maxTimeoutSeconds: 300,
          extra: { name: 'USDC', version: '2' },
        },
      ],
    })
    expect((await fetch(`${origin}/x402/pay/${crypto.randomUUID()}`)).status).toBe(404)
  })

  test('x402-fetch (v1) pays with its random nonce; X-PAYMENT-RESPONSE names the transaction; once', async () => {
    const s = await setup('40000')
    const pay = wrapV1(fetch, (await createSigner('base-sepolia', s.key)) as any)
    const res = await pay(`${origin}/x402/pay/${s.challenge.id}`)
    expect(res.status).toBe(200)
    const settled = decodeXPaymentResponse(res.headers.get('x-payment-response')!)
    expect(settled).toMatchObject({ success: true, network: 'base-sepolia' })
    const body = (await res.json()) as any
    expect(body.data).toMatchObject({ status: 'settled', settle_tx: settled.transaction, amount: '40000' })
    expect(await chain.balance(s.payeeWallet.address)).toBe(40000n)
    // the link again: the receipt, nothing moves
    const again = await fetch(`${origin}/x402/pay/${s.challenge.id}`)
    expect(again.status).toBe(200)
    expect(((await again.json()) as any).data.settle_tx).toBe(settled.transaction)
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key })).status).toBe('settled')
    expect(await chain.balance(s.payeeWallet.address)).toBe(40000n)
  })

  test('@x402/fetch with @x402/evm (v2, validAfter 0) pays; PAYMENT-RESPONSE names the transaction', async () => {
    const s = await setup('30000')
    const client = new x402Client().register('eip155:84532', new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(s.key))))
    const res = await wrapV2(fetch, client)(`${origin}/x402/pay/${s.challenge.id}`)
    expect(res.status).toBe(200)
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!)
    expect(settled).toMatchObject({ success: true, network: 'eip155:84532' })
    expect(((await res.json()) as any).data.settle_tx).toBe(settled.transaction)
    expect(await chain.balance(s.payeeWallet.address)).toBe(30000n)
  })

  test('two challenges presented with the same authorization settle once: the second is 409', async () => {
    const payee = await x402Org()
    const payeeWallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, payeeWallet)
    const first = await newChallenge(t, payee, { amount: '20000' })
    const second = await newChallenge(t, payee, { amount: '20000' })
    const key = generatePrivateKey()
    await chain.mint(privateKeyToAccount(key).address, 1_000_000n)
    // capture the X-PAYMENT the stock client sends for the first challenge, then replay it on the second
    let header = ''
    const spy: typeof fetch = (async (input: any, init?: any) => {
      const h = init?.headers?.['X-PAYMENT']
      if (h) header = h
      return fetch(input, init)
    }) as any
    const res = await wrapV1(spy, (await createSigner('base-sepolia', key)) as any)(`${origin}/x402/pay/${first.id}`)
    expect(res.status).toBe(200)
    const replay = await fetch(`${origin}/x402/pay/${second.id}`, { headers: { 'X-PAYMENT': header } })
    expect(replay.status).toBe(409)
    expect(((await replay.json()) as any).error.code).toBe('conflict')
    expect(await chain.balance(payeeWallet.address)).toBe(20000n)
    expect(expectOk(await t.request('GET', `/v1/x402/challenges/${second.id}`, { key: payee.key })).status).toBe('pending')
  })

  test('a garbled payment header is a validation error; verification still applies on this path', async () => {
    const s = await setup()
    const bad = await fetch(`${origin}/x402/pay/${s.challenge.id}`, { headers: { 'X-PAYMENT': '%%%' } })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as any).error.message).toMatch(/^X-PAYMENT: /)
    // a v1 payment for another amount: amount_mismatch, whatever client made it
    const payment = {
      x402Version: 1,
      scheme: 'exact',
      network: 'base-sepolia',
      payload: {
        signature: `0x${'11'.repeat(65)}`,
        authorization: {
          from: s.address,
          to: s.payeeWallet.address,
          value: '1',
          validAfter: '0',
          validBefore: String(Math.floor(Date.now() / 1000) + 300),
          nonce: `0x${'22'.repeat(32)}`,
        },
      },
    }
    const res = await fetch(`${origin}/x402/pay/${s.challenge.id}`, { headers: { 'X-PAYMENT': Buffer.from(JSON.stringify(payment)).toString('base64') } })
    expect(res.status).toBe(422)
    expect(((await res.json()) as any).error.details.reasons).toContain('amount_mismatch')
  })
})
