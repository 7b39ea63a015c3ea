/**
 * Payments in the feed, on a real local chain (anvil): a claimed payment is `payment.paid`,
 * then `payment.settled` or `payment.failed`, for the payee (`direction: received`) and for a
 * payer organization here (`direction: sent`); a cap refusal fails at once; the deliveries of
 * payment events are `delivery.created` with them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { anvilBinary, startChain, type Chain } from '../x402/anvil'
import { signPayment } from '../x402/payer'
import { newChallenge, registerPayout, x402Org } from '../x402/helpers'
import { setSettleCaps } from '../../src/x402/caps'

type Change = { id: string; type: string; resource: { type: string; id: string }; data: Record<string, any> }

describe.skipIf(!anvilBinary())('payments in the changes feed', () => {
  let chain: Chain
  let t: TestApp

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    t = await testApp({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
  })
  afterAll(() => chain?.stop())

  const cursorOf = async (o: TestOrg) => expectOk(await t.request('GET', '/v1/changes/cursor', { key: o.key })).cursor as string
  const changes = async (o: TestOrg, cursor: string, types = 'payment.*,delivery.*') =>
    expectOk(await t.request('GET', `/v1/changes?cursor=${cursor}&types=${types}`, { key: o.key })) as Change[]

  async function setup(amount: string, fund: bigint) {
    const payee = await x402Org()
    const payeeWallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, payeeWallet)
    const challenge = await newChallenge(t, payee, { amount })
    const payer = await x402Org()
    const payerKey = generatePrivateKey()
    const payerAddress = privateKeyToAccount(payerKey).address
    if (fund) await chain.mint(payerAddress, fund)
    return { payee, payeeWallet, challenge, payer, payerKey, payerAddress, starts: { payee: await cursorOf(payee), payer: await cursorOf(payer) } }
  }
  const pay = (key: string, id: string, payment: unknown) => t.request('POST', `/v1/x402/challenges/${id}/pay`, { key, body: { payment } })

  test('settled: paid then settled for both organizations; the payee endpoint delivery is created with it', async () => {
    const s = await setup('20000', 1_000_000n)
    const sql = await testSql()
    const endpointId = crypto.randomUUID()
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${endpointId}, ${s.payee.orgId}, 'http', 'https://payments.example.com/hook', true, '{"event_types": ["payment.settled", "payment.failed"]}')`
    const receipt = expectOk(await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge)))

    const payee = await changes(s.payee, s.starts.payee)
    expect(payee.map(c => c.type)).toEqual(['payment.paid', 'payment.settled', 'delivery.created'])
    const facts = {
      challenge_id: s.challenge.id,
      network: 'base-sepolia',
      amount: '20000',
      asset: s.challenge.asset,
      payer: s.payerAddress,
      payer_org: s.payer.orgId,
      pay_to: s.payeeWallet.address,
    }
    expect(payee[0]).toMatchObject({ resource: { type: 'challenge', id: s.challenge.id }, data: { ...facts, direction: 'received' } })
    expect(payee[0]!.data.settle_tx).toBeUndefined()
    expect(payee[1]).toMatchObject({
      resource: { type: 'challenge', id: s.challenge.id },
      data: { ...facts, direction: 'received', settle_tx: receipt.settle_tx },
    })
    expect(payee[2]).toMatchObject({
      resource: { type: 'delivery' },
      data: { endpoint_id: endpointId, event_type: 'payment.settled', status: 'pending', email_id: null },
    })
    const [delivery] = await sql<{ event_id: string }[]>`select event_id from webhook_deliveries where id = ${payee[2]!.resource.id}`
    expect(payee[2]!.data.event_id).toBe(delivery!.event_id)

    const payer = await changes(s.payer, s.starts.payer)
    expect(payer.map(c => c.type)).toEqual(['payment.paid', 'payment.settled'])
    expect(payer[1]).toMatchObject({ data: { ...facts, direction: 'sent', settle_tx: receipt.settle_tx } })
  })

  test('failed on chain (insufficient funds): paid, then failed with the reason', async () => {
    const s = await setup('10000', 5000n)
    expect((await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge))).status).toBe(502)
    const payee = await changes(s.payee, s.starts.payee)
    expect(payee.map(c => c.type)).toEqual(['payment.paid', 'payment.failed'])
    expect(payee[1]).toMatchObject({
      data: {
        challenge_id: s.challenge.id,
        direction: 'received',
        failure_reason: 'insufficient_funds',
        failure_category: 'settlement',
        reasons: ['insufficient_funds'],
      },
    })
    expect((await changes(s.payer, s.starts.payer)).map(c => [c.type, c.data.direction])).toEqual([
      ['payment.paid', 'sent'],
      ['payment.failed', 'sent'],
    ])
  })

  test('refused by a payee cap: failed at once, never paid', async () => {
    const s = await setup('10000', 1_000_000n)
    await setSettleCaps(await testSql(), s.payee.orgId, { daily: '5000', monthly: 'default', per_settle: 'default' })
    expect((await pay(s.payer.key, s.challenge.id, await signPayment(s.payerKey, s.challenge))).status).toBe(422)
    const payee = await changes(s.payee, s.starts.payee)
    expect(payee.map(c => c.type)).toEqual(['payment.failed'])
    expect(payee[0]).toMatchObject({ data: { failure_category: 'cap', failure_reason: 'settle_daily_cap_exceeded' } })
    expect(await chain.balance(s.payeeWallet.address)).toBe(0n)
  })
})
