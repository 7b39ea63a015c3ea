/**
 * The second run the issue asks for: Circle's USDC at base mainnet's canonical address on an
 * anvil with chain id 8453, named "USD Coin" as on base. Settled once by the direct JSON-RPC
 * facilitator and once through the x402 HTTP facilitator API, served locally by the `x402`
 * package's own facilitator code (verify and settle), so the HTTP path is checked against code
 * we did not write.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createWalletClient, http, publicActions } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { base } from 'viem/chains'
import { settle as x402Settle, verify as x402Verify } from 'x402/facilitator'
import { testApp, type TestApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { anvilBinary, startChain, type Chain } from './anvil'
import { signPayment } from './payer'
import { newChallenge, registerPayout, x402Org } from './helpers'

describe.skipIf(!anvilBinary())('base (chain 8453, "USD Coin") on anvil', () => {
  let chain: Chain
  let direct: TestApp
  let viaHttp: TestApp
  let facilitator: ReturnType<typeof Bun.serve>
  const calls: string[] = []

  beforeAll(async () => {
    chain = await startChain('base')
    const wallet = createWalletClient({
      chain: { ...base, rpcUrls: { default: { http: [chain.url] } } },
      transport: http(chain.url),
      account: privateKeyToAccount(chain.settlerKey),
    }).extend(publicActions)
    // An x402 HTTP facilitator made of the reference package's own verify and settle.
    facilitator = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        const path = new URL(req.url).pathname
        calls.push(path)
        const { paymentPayload, paymentRequirements } = (await req.json()) as any
        if (path === '/verify') return Response.json(await x402Verify(wallet as any, paymentPayload, paymentRequirements))
        if (path === '/settle') return Response.json(await x402Settle(wallet as any, paymentPayload, paymentRequirements))
        return new Response('not found', { status: 404 })
      },
    })
    direct = await testApp({ X402_RPC_URL_BASE: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
    viaHttp = await testApp({ X402_RPC_URL_BASE: chain.url, X402_FACILITATOR_URL_BASE: `http://127.0.0.1:${facilitator.port}` })
  })
  afterAll(() => {
    facilitator?.stop(true)
    chain?.stop()
  })

  async function setup(t: TestApp, amount: string, fund: bigint) {
    const payee = await x402Org()
    const payeeWallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, payeeWallet, 'base')
    const challenge = await newChallenge(t, payee, { amount, network: 'base' })
    const payer = await x402Org()
    const payerKey = generatePrivateKey()
    if (fund) await chain.mint(privateKeyToAccount(payerKey).address, fund)
    return { payee, payeeWallet, challenge, payer, payerKey }
  }

  test('a base challenge names "USD Coin"; the x402 client signs over it and the direct facilitator settles', async () => {
    const s = await setup(direct, '120000', 1_000_000n)
    expect(s.challenge.payment_requirements).toMatchObject({ network: 'base', asset: chain.usdc, extra: { name: 'USD Coin', version: '2' } })
    const receipt = expectOk(
      await direct.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, {
        key: s.payer.key,
        body: { payment: await signPayment(s.payerKey, s.challenge) },
      }),
    )
    expect((await chain.client.getTransactionReceipt({ hash: receipt.settle_tx })).status).toBe('success')
    expect(await chain.balance(s.payeeWallet.address)).toBe(120000n)
  })

  test('a signature over base-sepolia\'s name "USDC" does not recover on base: signer_mismatch', async () => {
    const s = await setup(direct, '1000', 1_000_000n)
    const payment = await signPayment(s.payerKey, s.challenge, (_a, r) => void (r.extra = { name: 'USDC', version: '2' }))
    const res = await direct.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, { key: s.payer.key, body: { payment } })
    expectError(res, 422, 'payment_verification_failed')
    expect(res.body.error.details.reasons).toEqual(['signer_mismatch'])
  })

  test('through the x402 HTTP facilitator API: /verify then /settle, settled on chain', async () => {
    const s = await setup(viaHttp, '50000', 1_000_000n)
    calls.length = 0
    const receipt = expectOk(
      await viaHttp.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, {
        key: s.payer.key,
        body: { payment: await signPayment(s.payerKey, s.challenge) },
      }),
    )
    expect(calls).toEqual(['/verify', '/settle'])
    expect((await chain.client.getTransactionReceipt({ hash: receipt.settle_tx })).status).toBe('success')
    expect(await chain.balance(s.payeeWallet.address)).toBe(50000n)
  })

  test('the HTTP facilitator reports insufficient funds: permanent insufficient_funds', async () => {
    const s = await setup(viaHttp, '50000', 10n)
    const res = await viaHttp.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, {
      key: s.payer.key,
      body: { payment: await signPayment(s.payerKey, s.challenge) },
    })
    expectError(res, 502, 'settlement_failed')
    expect(res.body.error.details.reasons).toEqual(['insufficient_funds'])
    expect(res.headers.get('retry-after')).toBeNull()
  })

  test('an HTTP facilitator that does not answer: transient facilitator_unavailable with Retry-After', async () => {
    const down = await testApp({ X402_RPC_URL_BASE: chain.url, X402_FACILITATOR_URL_BASE: 'http://127.0.0.1:9' })
    const s = await setup(down, '50000', 1_000_000n)
    const res = await down.request('POST', `/v1/x402/challenges/${s.challenge.id}/pay`, {
      key: s.payer.key,
      body: { payment: await signPayment(s.payerKey, s.challenge) },
    })
    expectError(res, 502, 'settlement_failed')
    expect(res.body.error.details.reasons).toEqual(['facilitator_unavailable'])
    expect(res.headers.get('retry-after')).toBe('5')
    expect(expectOk(await down.request('GET', `/v1/x402/challenges/${s.challenge.id}`, { key: s.payee.key })).status).toBe('pending')
  })
})
