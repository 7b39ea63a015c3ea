/**
 * Two service processes settling at once with one settler key, on a real local chain: both read
 * the key's pending transaction count at the same moment and sign the same nonce. The node takes
 * one transaction and refuses the other ("nonce too low"), which is sent again on the next nonce:
 * every payment settles, each with a transaction of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testApp, type TestApp } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { spawnService, type ServiceProcess } from '../helpers/service-process'
import { anvilBinary, startChain, type Chain } from './anvil'
import { newChallenge, registerPayout, x402Org } from './helpers'
import { signPayment } from './payer'

const onServer = (await testDatabase()).kind === 'postgres'
const PAYMENTS = 16

describe.skipIf(!anvilBinary() || !onServer)('settling from two processes with one settler key', () => {
  let chain: Chain
  let t: TestApp
  const services: ServiceProcess[] = []

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    const env = { X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey }
    t = await testApp(env)
    for (let i = 0; i < 2; i++) services.push(await spawnService({ ...env, ROLES: 'api' }))
  }, 60_000)

  afterAll(async () => {
    for (const s of services) s.proc.kill()
    await Promise.all(services.map(s => s.exited))
    chain?.stop()
  })

  test('payments paid through both processes at once all settle, each once', async () => {
    const payee = await x402Org()
    const payeeWallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, payeeWallet)
    const payer = await x402Org()
    const runs = await Promise.all(
      Array.from({ length: PAYMENTS }, async () => {
        const key = generatePrivateKey()
        await chain.mint(privateKeyToAccount(key).address, 5000n)
        const challenge = await newChallenge(t, payee, { amount: '5000' })
        return { challenge, payment: await signPayment(key, challenge) }
      }),
    )
    // half through each process, all at once
    const answers = await Promise.all(
      runs.map(async ({ challenge, payment }, i) => {
        const res = await fetch(`http://127.0.0.1:${services[i % 2]!.apiPort}/v1/x402/challenges/${challenge.id}/pay`, {
          method: 'POST',
          headers: { authorization: `Bearer ${payer.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ payment }),
        })
        return { status: res.status, body: (await res.json()) as any }
      }),
    )
    expect(answers.map(a => (a.status === 200 ? 'settled' : `${a.status} ${a.body.error?.code}: ${a.body.error?.message}`))).toEqual(
      Array(PAYMENTS).fill('settled'),
    )
    expect(new Set(answers.map(a => a.body.data.settle_tx)).size).toBe(PAYMENTS)
    expect(await chain.balance(payeeWallet.address)).toBe(5000n * BigInt(PAYMENTS))
  })
})
