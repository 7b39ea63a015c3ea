/**
 * The email flow's events, delivered by a running worker (which also runs the step jobs) and
 * checked with Stripe's and Standard Webhooks' verifiers: payment.settled and
 * interaction.x402.settled for the payee, and the payer organization's own payment.settled
 * copy; payment.failed and interaction.x402.rejected for a rejected payment.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Stripe from 'stripe'
import { Webhook } from 'standardwebhooks'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testSql } from '../../helpers/app'
import { expectOk } from '../../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../../helpers/mail'
import { startReceiver, type Receiver } from '../../helpers/receiver'
import { attachmentContents } from '../../../src/mail/inbound/parse'
import { startWorker, type Worker } from '../../../src/jobs/worker'
import { JOB_KINDS } from '../../../src/job-kinds'
import { anvilBinary, startChain, type Chain } from '../anvil'
import { signPayment } from '../payer'
import { registerPayout, x402Org } from '../helpers'

const stripe = new Stripe('sk_test_unused')
const sql = await testSql()

describe.skipIf(!anvilBinary())('email-native x402 events', () => {
  let chain: Chain
  let t: InboundHarness
  let worker: Worker
  let receiver: Receiver

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    t = await inboundHarness({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey, WEBHOOK_ALLOW_LOOPBACK: 'true' })
    worker = await startWorker(t.ctx, { kinds: JOB_KINDS, pollMs: 50 })
    receiver = startReceiver()
  })
  afterAll(async () => {
    await worker?.stop(1000)
    receiver?.stop()
    await t?.stop()
    chain?.stop()
  })

  test('payment.settled and interaction.x402.settled reach the payee, signed; the payer org gets its payment.settled copy', async () => {
    const payee = await x402Org()
    const wallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, wallet)
    const payeeAddress = await managedAddress(t.ctx, payee.orgId)
    const payer = await x402Org()
    const payerAddress = await managedAddress(t.ctx, payer.orgId)
    const payerKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(payerKey).address, 1_000_000n)
    const hook = `/email-${crypto.randomUUID()}`
    expectOk(
      await t.request('POST', '/v1/endpoints', {
        key: payee.key,
        body: { url: receiver.url(`${hook}/payee`), rules: { event_types: ['payment.settled', 'interaction.x402.settled'] } },
      }),
      201,
    )
    expectOk(
      await t.request('POST', '/v1/endpoints', { key: payer.key, body: { url: receiver.url(`${hook}/payer`), rules: { event_types: ['payment.settled'] } } }),
      201,
    )
    const created = expectOk(
      await t.request('POST', '/v1/x402/email-challenges', {
        key: payee.key,
        body: { from: payeeAddress, to: payerAddress, amount: '15000', network: 'base-sepolia' },
      }),
      201,
    )
    const [email] = await sql<{ id: string; raw: Buffer }[]>`
      select e.id, c.raw from emails e join email_contents c on c.email_id = e.id where e.org_id = ${payer.orgId} and e.direction = 'inbound'`
    const part = (await attachmentContents(new Uint8Array(email!.raw))).find(a => a.filename === 'interaction.json')!
    const challenge = JSON.parse(new TextDecoder().decode(part.content))
    const payment = await signPayment(payerKey, {
      payment_requirements: challenge.payload.payment_requirements,
      authorization_nonce: challenge.payload.authorization_nonce,
    })
    const step = {
      interaction_version: 1,
      interaction_id: created.interaction_id,
      protocol: 'x402.payment',
      protocol_version: 1,
      step: 'payment',
      step_id: crypto.randomUUID(),
      prev_step_id: challenge.step_id,
      expires_at: null,
      payload: { payment },
    }
    expectOk(
      await t.request('POST', '/v1/send-mail', {
        key: payer.key,
        body: {
          from: payerAddress,
          in_reply_to_email_id: email!.id,
          subject: 'paid',
          body_text: 'attached',
          attachments: [{ filename: 'interaction.json', content_type: 'application/json', content: Buffer.from(JSON.stringify(step)).toString('base64') }],
        },
      }),
    )
    const payeeCopies = await receiver.waitFor(2, `${hook}/payee`)
    const [payerCopy] = await receiver.waitFor(1, `${hook}/payer`)
    const payeeSecret = expectOk(await t.request('GET', '/v1/account/webhook-secret', { key: payee.key })).secret
    const events = await Promise.all(
      payeeCopies.map(c => stripe.webhooks.constructEventAsync(c.body, c.headers['service-signature']!, payeeSecret, 300) as Promise<any>),
    )
    const settled = events.find(e => e.type === 'payment.settled')
    const interaction = events.find(e => e.type === 'interaction.x402.settled')
    expect(settled).toMatchObject({ challenge_id: created.challenge_id, amount: '15000', payer_org: payer.orgId, direction: 'received' })
    expect(interaction).toMatchObject({
      interaction_id: created.interaction_id,
      challenge_id: created.challenge_id,
      payer_address: payerAddress,
      payer_org: payer.orgId,
      settle_tx: settled.settle_tx,
    })
    const payerSecret = expectOk(await t.request('GET', '/v1/account/webhook-secret', { key: payer.key })).secret
    expect(await stripe.webhooks.constructEventAsync(payerCopy!.body, payerCopy!.headers['service-signature']!, payerSecret, 300)).toMatchObject({
      type: 'payment.settled',
      direction: 'sent',
    })
    expect(await chain.balance(wallet.address)).toBe(15000n)
  })

  test('a rejected payment: payment.failed (both copies) and interaction.x402.rejected, signed, with the reasons', async () => {
    const payee = await x402Org()
    const wallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, wallet)
    const payeeAddress = await managedAddress(t.ctx, payee.orgId)
    const payer = await x402Org()
    const payerAddress = await managedAddress(t.ctx, payer.orgId)
    const payerKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(payerKey).address, 1_000_000n)
    const hook = `/reject-${crypto.randomUUID()}`
    expectOk(
      await t.request('POST', '/v1/endpoints', {
        key: payee.key,
        body: { url: receiver.url(`${hook}/payee`), rules: { event_types: ['payment.failed', 'interaction.x402.rejected'] } },
      }),
      201,
    )
    expectOk(
      await t.request('POST', '/v1/endpoints', { key: payer.key, body: { url: receiver.url(`${hook}/payer`), rules: { event_types: ['payment.failed'] } } }),
      201,
    )
    const created = expectOk(
      await t.request('POST', '/v1/x402/email-challenges', {
        key: payee.key,
        body: { from: payeeAddress, to: payerAddress, amount: '15000', network: 'base-sepolia' },
      }),
      201,
    )
    const [email] = await sql<{ id: string; raw: Buffer }[]>`
      select e.id, c.raw from emails e join email_contents c on c.email_id = e.id where e.org_id = ${payer.orgId} and e.direction = 'inbound'`
    const part = (await attachmentContents(new Uint8Array(email!.raw))).find(a => a.filename === 'interaction.json')!
    const challenge = JSON.parse(new TextDecoder().decode(part.content))
    // a tampered amount, signed as such: the signature is the payer's, the value is not the challenge's
    const payment = await signPayment(
      payerKey,
      { payment_requirements: challenge.payload.payment_requirements, authorization_nonce: challenge.payload.authorization_nonce },
      a => void (a.value = '1500'),
    )
    const step = {
      interaction_version: 1,
      interaction_id: created.interaction_id,
      protocol: 'x402.payment',
      protocol_version: 1,
      step: 'payment',
      step_id: crypto.randomUUID(),
      prev_step_id: challenge.step_id,
      expires_at: null,
      payload: { payment },
    }
    expectOk(
      await t.request('POST', '/v1/send-mail', {
        key: payer.key,
        body: {
          from: payerAddress,
          in_reply_to_email_id: email!.id,
          subject: 'paid',
          body_text: 'attached',
          attachments: [{ filename: 'interaction.json', content_type: 'application/json', content: Buffer.from(JSON.stringify(step)).toString('base64') }],
        },
      }),
    )
    const payeeCopies = await receiver.waitFor(2, `${hook}/payee`)
    const [payerCopy] = await receiver.waitFor(1, `${hook}/payer`)
    const verify = async (copy: (typeof payeeCopies)[number], key: string) => {
      const secret = expectOk(await t.request('GET', '/v1/account/webhook-secret', { key })).secret
      const event = (await stripe.webhooks.constructEventAsync(copy.body, copy.headers['service-signature']!, secret, 300)) as any
      expect(new Webhook(secret).verify(copy.body, copy.headers)).toMatchObject({ id: event.id, type: event.type })
      return event
    }
    const events = await Promise.all(payeeCopies.map(c => verify(c, payee.key)))
    expect(events.find(e => e.type === 'payment.failed')).toMatchObject({
      direction: 'received',
      challenge_id: created.challenge_id,
      amount: '15000',
      payer_org: payer.orgId,
      failure_reason: 'amount_mismatch',
      failure_category: 'verification',
      reasons: ['amount_mismatch'],
    })
    expect(events.find(e => e.type === 'interaction.x402.rejected')).toMatchObject({
      interaction_id: created.interaction_id,
      challenge_id: created.challenge_id,
      payer_address: payerAddress,
      payer_org: payer.orgId,
      reason: 'amount_mismatch',
      reasons: ['amount_mismatch'],
      failure_category: 'verification',
    })
    expect(await verify(payerCopy!, payer.key)).toMatchObject({ type: 'payment.failed', direction: 'sent', failure_reason: 'amount_mismatch' })
    expect(await chain.balance(wallet.address)).toBe(0n)
  })
})
