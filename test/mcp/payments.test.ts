/**
 * The x402 tools through the SDK's client, on a real local chain (anvil with Circle's USDC, as in
 * test/x402): a payee asks with create_payment_challenge, a payer pays it with
 * pay_payment_challenge under its spend policy (get/update_spend_policy), and both read their
 * books (list_payments, list_declined_payments). Balances are read from the chain.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import type { Client } from '@modelcontextprotocol/client'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testApp, type TestApp, type TestOrg } from '../helpers/app'
import { anvilBinary, startChain, type Chain } from '../x402/anvil'
import { keyOf, registerPayout, x402Org } from '../x402/helpers'
import { signPayment } from '../x402/payer'
import { ERAS, mcpClient, toolErrorOf } from './helpers'

if (!anvilBinary()) console.warn('MCP payment tests skipped: the anvil binary of @foundry-rs/anvil-linux-amd64 could not be installed')

const ajv = new Ajv2020({ strict: false, allErrors: true })
addFormats(ajv)

interface Result {
  isError?: boolean
  structuredContent: any
}

describe.skipIf(!anvilBinary())('x402 tools on anvil (base-sepolia)', () => {
  let chain: Chain
  let t: TestApp
  const schemas = new Map<string, ReturnType<typeof ajv.compile>>()

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    t = await testApp({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
  })
  afterAll(() => chain?.stop())

  /** A client of the SDK whose every successful result is checked against the tool's output schema. */
  async function as(org: TestOrg | string, era: (typeof ERAS)[number]['era']) {
    const client: Client = await mcpClient(t, typeof org === 'string' ? org : org.key, era)
    if (!schemas.size) for (const tool of (await client.listTools()).tools) schemas.set(tool.name, ajv.compile(tool.outputSchema!))
    return {
      client,
      async call(name: string, args: Record<string, unknown>): Promise<Result> {
        const result = (await client.callTool({ name, arguments: args })) as Result
        if (!result.isError) {
          const validate = schemas.get(name)!
          if (!validate(result.structuredContent)) throw new Error(`${name}: ${ajv.errorsText(validate.errors)}`)
        }
        return result
      },
    }
  }

  for (const { era, version } of ERAS) {
    test(`${version}: challenge, a declined payment, a settled one paid once, both sides' books`, async () => {
      const payee = await x402Org()
      const payeeWallet = privateKeyToAccount(generatePrivateKey())
      await registerPayout(t, payee, payeeWallet)
      const payer = await x402Org()
      const payerKey = generatePrivateKey()
      const payerAddress = privateKeyToAccount(payerKey).address
      await chain.mint(payerAddress, 1_000_000n)
      const asPayee = await as(payee, era)
      const asPayer = await as(payer, era)

      const ask = { amount: '40000', network: 'base-sepolia', description: `report ${era}`, idempotency_key: `c-${crypto.randomUUID()}` }
      const challenge = (await asPayee.call('create_payment_challenge', ask)).structuredContent
      expect(challenge).toMatchObject({ status: 'pending', amount: '40000', pay_to: payeeWallet.address })
      expect((await asPayee.call('create_payment_challenge', ask)).structuredContent.id).toBe(challenge.id)

      // the kill switch: declined, recorded, the challenge still pending, nothing moved
      expect((await asPayer.call('get_spend_policy', {})).structuredContent).toEqual({
        paused: false,
        per_payment_cap: null,
        daily_cap: null,
        payee_allowlist: null,
        updated_at: null,
      })
      expect((await asPayer.call('update_spend_policy', { paused: true })).structuredContent.paused).toBe(true)
      const declined = await asPayer.call('pay_payment_challenge', { challenge_id: challenge.id, payment: await signPayment(payerKey, challenge) })
      expect(declined.isError).toBe(true)
      expect(toolErrorOf(declined)).toMatchObject({ code: 'payment_declined', details: { reasons: ['paused'] } })
      const declines = (await asPayer.call('list_declined_payments', {})).structuredContent
      expect(declines.items).toEqual([expect.objectContaining({ challenge_id: challenge.id, amount: '40000', reasons: ['paused'] })])
      expect((await asPayee.call('get_payment_challenge', { challenge_id: challenge.id })).structuredContent.status).toBe('pending')
      expect(await chain.balance(payerAddress)).toBe(1_000_000n)

      // a cap above the amount lets it through; a second pay returns the same receipt
      const policy = (await asPayer.call('update_spend_policy', { paused: false, per_payment_cap: '50000' })).structuredContent
      expect(policy).toMatchObject({ paused: false, per_payment_cap: '50000', daily_cap: null })
      const paid = await asPayer.call('pay_payment_challenge', { challenge_id: challenge.id, payment: await signPayment(payerKey, challenge) })
      expect(paid.isError).toBeUndefined()
      const receipt = paid.structuredContent
      expect(receipt).toMatchObject({
        challenge_id: challenge.id,
        status: 'settled',
        amount: '40000',
        pay_to: payeeWallet.address,
        payer: payerAddress.toLowerCase(),
      })
      expect((await chain.client.getTransactionReceipt({ hash: receipt.settle_tx })).status).toBe('success')
      expect(
        (await asPayer.call('pay_payment_challenge', { challenge_id: challenge.id, payment: await signPayment(payerKey, challenge) })).structuredContent,
      ).toEqual(receipt)
      expect(await chain.balance(payeeWallet.address)).toBe(40000n)
      expect(await chain.balance(payerAddress)).toBe(960000n)

      const sent = (await asPayer.call('list_payments', { direction: 'sent' })).structuredContent
      expect(sent.items).toEqual([
        expect.objectContaining({
          challenge_id: challenge.id,
          direction: 'sent',
          status: 'settled',
          settle_tx: receipt.settle_tx,
          counterparty: payeeWallet.address,
        }),
      ])
      const received = (await asPayee.call('list_payments', { status: 'settled', limit: 1 })).structuredContent
      expect(received).toMatchObject({ total: 1, cursor: null, items: [{ challenge_id: challenge.id, direction: 'received', amount: '40000' }] })
      expect((await asPayee.call('list_payments', { direction: 'sent' })).structuredContent.items).toEqual([])
      expect((await asPayee.call('get_payment_challenge', { challenge_id: challenge.id })).structuredContent).toMatchObject({
        status: 'settled',
        settle_tx: receipt.settle_tx,
      })
      // the payer may pay with the id, not read the challenge
      expect(toolErrorOf(await asPayer.call('get_payment_challenge', { challenge_id: challenge.id })).code).toBe('not_found')
      await asPayee.client.close()
      await asPayer.client.close()
    }, 60_000)
  }

  test('update_spend_policy needs an owner or admin credential, as on the REST route; a member may read it', async () => {
    const org = await x402Org()
    const member = await as(await keyOf(org, 'member'), 'modern')
    const refused = await member.call('update_spend_policy', { paused: true })
    expect(toolErrorOf(refused).code).toBe('forbidden')
    expect((await member.call('get_spend_policy', {})).structuredContent.paused).toBe(false)
    const admin = await as(await keyOf(org, 'admin'), 'modern')
    expect((await admin.call('update_spend_policy', { daily_cap: '1000000' })).structuredContent.daily_cap).toBe('1000000')
    expect(toolErrorOf(await admin.call('update_spend_policy', { daily_cap: 'a lot' }))).toMatchObject({
      code: 'validation_error',
      message: expect.stringMatching(/^daily_cap: /),
    })
    await member.client.close()
    await admin.client.close()
  })
})
