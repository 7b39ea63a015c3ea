/**
 * The payer's spend policy and declined payments, the ledger (JSON, filters, cursor, CSV) and
 * the payment events, on anvil with Circle's USDC. Both event copies (payee `received`, payer
 * `sent`) are verified with Stripe's and Standard Webhooks' own verifiers.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Stripe from 'stripe'
import { Webhook } from 'standardwebhooks'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { anvilBinary, startChain, type Chain } from './anvil'
import { signPayment } from './payer'
import { keyOf, newChallenge, registerPayout, x402Org } from './helpers'

const stripe = new Stripe('sk_test_unused')

describe.skipIf(!anvilBinary())('spend policy, ledger and events on anvil', () => {
  let chain: Chain
  let t: TestApp
  let worker: Worker
  let receiver: Receiver

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    t = await testApp({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey, WEBHOOK_ALLOW_LOOPBACK: 'true' })
    worker = await startWorker(t.ctx, { kinds: JOB_KINDS, pollMs: 50 })
    receiver = startReceiver()
  })
  afterAll(async () => {
    await worker?.stop(1000)
    receiver?.stop()
    chain?.stop()
  })

  async function payee() {
    const org = await x402Org()
    const w = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, org, w)
    return { org, wallet: w }
  }
  async function payer(fund = 100_000_000n) {
    const org = await x402Org()
    const key = generatePrivateKey()
    if (fund > 0n) await chain.mint(privateKeyToAccount(key).address, fund)
    return { org, key, address: privateKeyToAccount(key).address }
  }
  const pay = async (p: { org: TestOrg; key: `0x${string}` }, challenge: any) =>
    t.request('POST', `/v1/x402/challenges/${challenge.id}/pay`, { key: p.org.key, body: { payment: await signPayment(p.key, challenge) } })
  const putPolicy = (org: TestOrg, body: unknown, key = org.key) => t.request('PUT', '/v1/x402/spend-policy', { key, body })

  describe('spend policy', () => {
    test('defaults, merge update, explicit null clears; owner or admin only', async () => {
      const { org } = await payer(0n)
      expect(expectOk(await t.request('GET', '/v1/x402/spend-policy', { key: org.key }))).toEqual({
        paused: false,
        per_payment_cap: null,
        daily_cap: null,
        payee_allowlist: null,
        updated_at: null,
      })
      expectOk(await putPolicy(org, { per_payment_cap: '5000', daily_cap: '20000' }))
      const merged = expectOk(await putPolicy(org, { paused: true }))
      expect(merged).toMatchObject({ paused: true, per_payment_cap: '5000', daily_cap: '20000', payee_allowlist: null })
      expect(expectOk(await putPolicy(org, { per_payment_cap: null }))).toMatchObject({ paused: true, per_payment_cap: null, daily_cap: '20000' })
      for (const key of [await keyOf(org, 'member'), await keyOf(org, null)]) {
        expectError(await putPolicy(org, { paused: false }, key), 403, 'forbidden')
        expect(expectOk(await t.request('GET', '/v1/x402/spend-policy', { key })).paused).toBe(true)
      }
      expectError(await putPolicy(org, { daily_cap: '-1' }), 400, 'validation_error', /^daily_cap: /)
      expectError(await putPolicy(org, { payee_allowlist: ['nope'] }), 400, 'validation_error', /^payee_allowlist/)
      expectError(await putPolicy(org, { surprise: true }), 400, 'validation_error')
    })

    test('each refusal: 422 payment_declined, the challenge stays pending, listed in declined-payments', async () => {
      const pe = await payee()
      const p = await payer()
      const c = await newChallenge(t, pe.org, { amount: '10000' })
      const expectDeclined = async (reasons: string[]) => {
        const res = await pay(p, c)
        expectError(res, 422, 'payment_declined')
        expect(res.body.error.details).toEqual({ reasons, failure_category: 'declined' })
      }
      expectOk(await putPolicy(p.org, { paused: true }))
      await expectDeclined(['paused'])
      expectOk(await putPolicy(p.org, { paused: false, per_payment_cap: '9999' }))
      await expectDeclined(['per_payment_cap'])
      expectOk(await putPolicy(p.org, { per_payment_cap: null, daily_cap: '9999', payee_allowlist: [privateKeyToAccount(generatePrivateKey()).address] }))
      await expectDeclined(['daily_cap', 'allowlist'])
      expect(expectOk(await t.request('GET', `/v1/x402/challenges/${c.id}`, { key: pe.org.key })).status).toBe('pending')
      const declined = await t.request('GET', '/v1/x402/declined-payments?limit=2', { key: p.org.key })
      const page = expectOk(declined)
      expect(declined.body.meta).toMatchObject({ total: 3, limit: 2 })
      expect(page.map((d: any) => d.reasons)).toEqual([['daily_cap', 'allowlist'], ['per_payment_cap']])
      expect(page[0]).toMatchObject({ challenge_id: c.id, network: 'base-sepolia', amount: '10000', pay_to: pe.wallet.address })
      const next = expectOk(await t.request('GET', `/v1/x402/declined-payments?limit=2&cursor=${declined.body.meta.cursor}`, { key: p.org.key }))
      expect(next.map((d: any) => d.reasons)).toEqual([['paused']])
      // allowed again (the allowlist names this payee, lowercase or not): it settles
      expectOk(await putPolicy(p.org, { daily_cap: null, payee_allowlist: [pe.wallet.address.toLowerCase()] }))
      expectOk(await pay(p, c))
    })

    test('the daily cap counts what was already paid today', async () => {
      const pe = await payee()
      const p = await payer()
      expectOk(await putPolicy(p.org, { daily_cap: '15000' }))
      expectOk(await pay(p, await newChallenge(t, pe.org, { amount: '10000' })))
      const res = await pay(p, await newChallenge(t, pe.org, { amount: '10000' }))
      expectError(res, 422, 'payment_declined')
      expect(res.body.error.details.reasons).toEqual(['daily_cap'])
      expectOk(await pay(p, await newChallenge(t, pe.org, { amount: '5000' })))
    })
  })

  describe('ledger', () => {
    test('received and sent rows, newest first, filters, cursor; CSV attachment', async () => {
      const pe = await payee()
      const p = await payer()
      const started = new Date().toISOString()
      const receipts = []
      for (const amount of ['1000', '2000', '3000']) receipts.push(expectOk(await pay(p, await newChallenge(t, pe.org, { amount }))))
      const failed = await newChallenge(t, pe.org, { amount: '4000' })
      const poor = await payer(10n)
      expectError(await pay(poor, failed), 502, 'settlement_failed')

      const received = await t.request('GET', '/v1/x402/payments?limit=2', { key: pe.org.key })
      expect(received.body.meta).toMatchObject({ total: 4, limit: 2 })
      expect(expectOk(received).map((r: any) => [r.amount, r.status, r.direction])).toEqual([
        ['4000', 'failed', 'received'],
        ['3000', 'settled', 'received'],
      ])
      expect(received.body.data[0]).toMatchObject({ failure_reason: 'insufficient_funds', counterparty: poor.address, settle_tx: null })
      const more = expectOk(await t.request('GET', `/v1/x402/payments?limit=2&cursor=${received.body.meta.cursor}`, { key: pe.org.key }))
      expect(more.map((r: any) => r.amount)).toEqual(['2000', '1000'])
      const settled = expectOk(await t.request('GET', '/v1/x402/payments?status=settled', { key: pe.org.key }))
      expect(settled.map((r: any) => r.settle_tx)).toEqual(receipts.map(r => r.settle_tx).reverse())
      expect(expectOk(await t.request('GET', '/v1/x402/payments?direction=sent', { key: pe.org.key }))).toEqual([])
      const sent = expectOk(await t.request('GET', '/v1/x402/payments?direction=sent', { key: p.org.key }))
      expect(sent.map((r: any) => [r.amount, r.status, r.counterparty])).toEqual([
        ['3000', 'settled', pe.wallet.address],
        ['2000', 'settled', pe.wallet.address],
        ['1000', 'settled', pe.wallet.address],
      ])
      // inclusive dates: created_before = the newest row's own instant includes it
      const newest = received.body.data[0]
      expect(
        expectOk(await t.request('GET', `/v1/x402/payments?created_after=${encodeURIComponent(newest.created_at)}`, { key: pe.org.key })).map((r: any) => r.id),
      ).toEqual([newest.id])
      // the bounds compare at the precision shown (milliseconds) though the row keeps microseconds
      await t.ctx.sql`update x402_ledger set created_at = date_trunc('milliseconds', created_at) + interval '0.6 milliseconds' where id = ${newest.id}`
      const exactly = `created_after=${encodeURIComponent(newest.created_at)}&created_before=${encodeURIComponent(newest.created_at)}`
      expect(expectOk(await t.request('GET', `/v1/x402/payments?${exactly}`, { key: pe.org.key })).map((r: any) => r.id)).toEqual([newest.id])
      expect(expectOk(await t.request('GET', `/v1/x402/payments?created_before=${encodeURIComponent(started)}`, { key: pe.org.key }))).toEqual([])
      expectError(await t.request('GET', '/v1/x402/payments?created_after=2026-01-01', { key: pe.org.key }), 400, 'validation_error', /^created_after: /)
      expectError(await t.request('GET', '/v1/x402/payments?limit=201', { key: pe.org.key }), 400, 'validation_error', /^limit: /)
      expectError(await t.request('GET', '/v1/x402/payments?network=solana', { key: pe.org.key }), 400, 'validation_error', /^network: /)

      const csv = await t.request('GET', '/v1/x402/payments?status=settled', { key: pe.org.key, headers: { accept: 'text/csv' } })
      expect(csv.status).toBe(200)
      expect(csv.headers.get('content-type')).toStartWith('text/csv')
      expect(csv.headers.get('content-disposition')).toBe('attachment; filename="x402-payments.csv"')
      expect(csv.headers.get('x-truncated')).toBeNull()
      const lines = (csv.body as string).trimEnd().split('\r\n')
      expect(lines[0]).toBe('id,challenge_id,direction,status,amount,asset,network,counterparty,settle_tx,failure_reason,created_at,updated_at')
      expect(lines.slice(1).map(l => l.split(',')[4])).toEqual(['3000', '2000', '1000'])
      expect(lines[1]!.split(',')[8]).toBe(receipts[2].settle_tx)
    })
  })

  describe('events', () => {
    test('payment.settled reaches the payee (received) and the payer org (sent), each signed with its own secret', async () => {
      const pe = await payee()
      const p = await payer()
      const hook = `/pay-${crypto.randomUUID()}`
      expectOk(
        await t.request('POST', '/v1/endpoints', {
          key: pe.org.key,
          body: { url: receiver.url(`${hook}/payee`), rules: { event_types: ['payment.settled', 'payment.failed'] } },
        }),
        201,
      )
      expectOk(
        await t.request('POST', '/v1/endpoints', { key: p.org.key, body: { url: receiver.url(`${hook}/payer`), rules: { event_types: ['payment.settled'] } } }),
        201,
      )
      const c = await newChallenge(t, pe.org, { amount: '7000' })
      const receipt = expectOk(await pay(p, c))
      const [payeeCopy] = await receiver.waitFor(1, `${hook}/payee`)
      const [payerCopy] = await receiver.waitFor(1, `${hook}/payer`)
      for (const [copy, org, direction] of [
        [payeeCopy!, pe.org, 'received'],
        [payerCopy!, p.org, 'sent'],
      ] as const) {
        const secret = expectOk(await t.request('GET', '/v1/account/webhook-secret', { key: org.key })).secret
        const event = (await stripe.webhooks.constructEventAsync(copy.body, copy.headers['service-signature']!, secret, 300)) as any
        expect(new Webhook(secret).verify(copy.body, copy.headers)).toMatchObject({ id: event.id })
        expect(event).toMatchObject({
          event: 'payment.settled',
          type: 'payment.settled',
          direction,
          challenge_id: c.id,
          network: 'base-sepolia',
          amount: '7000',
          asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
          payer_org: p.org.orgId,
          settle_tx: receipt.settle_tx,
          delivery: { attempt: 1 },
        })
      }
    })

    test('payment.failed carries failure_reason, failure_category and reasons', async () => {
      const pe = await payee()
      const hook = `/fail-${crypto.randomUUID()}`
      expectOk(
        await t.request('POST', '/v1/endpoints', { key: pe.org.key, body: { url: receiver.url(hook), rules: { event_types: ['payment.failed'] } } }),
        201,
      )
      const poor = await payer(1n)
      expectError(await pay(poor, await newChallenge(t, pe.org, { amount: '5000' })), 502, 'settlement_failed')
      const capped = await newChallenge(t, pe.org, { amount: '10000001' })
      expectError(await pay(await payer(), capped), 422, 'settle_cap_exceeded')
      const events = (await receiver.waitFor(2, hook)).map(r => r.json)
      expect(events.map(e => [e.event, e.failure_reason, e.failure_category, e.reasons])).toEqual(
        expect.arrayContaining([
          ['payment.failed', 'insufficient_funds', 'settlement', ['insufficient_funds']],
          ['payment.failed', 'amount_exceeds_per_settle_ceiling', 'cap', ['amount_exceeds_per_settle_ceiling']],
        ]),
      )
      expect(events.every(e => e.settle_tx === undefined && e.direction === 'received')).toBe(true)
    })
  })
})
