/**
 * Email-native x402 end to end on anvil: the payee's challenge goes out as real mail, the payer
 * signs with the `x402` reference client and replies in the thread; the service verifies,
 * settles on chain and answers with a receipt. Two organizations of this service exchange mail by
 * local delivery (DKIM by our own keys, verified by mailauth); an outside payer's replies arrive
 * over the SMTP listener, signed by keys published in the test's DNS.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testSql } from '../../helpers/app'
import { expectError, expectOk } from '../../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../../helpers/mail'
import { anvilBinary, startChain, type Chain } from '../anvil'
import { registerPayout, x402Org } from '../helpers'
import { bodyLengthLimited } from '../../../src/x402/email/inbound'
import { adminSetCaps, b64, outsidePayer, paymentStep, runStepJobs, signedFor, stepsReceived } from './helpers'
import { testDatabase } from '../../helpers/database'

const sql = await testSql()
// The embedded fallback serves one connection: bin/admin, a process of its own, needs a server.
const onServer = (await testDatabase()).kind === 'postgres'

describe.skipIf(!anvilBinary())('email-native x402 on anvil', () => {
  let chain: Chain
  let t: InboundHarness

  beforeAll(async () => {
    chain = await startChain('base-sepolia')
    t = await inboundHarness({ X402_RPC_URL_BASE_SEPOLIA: chain.url, X402_SETTLER_PRIVATE_KEY: chain.settlerKey })
  })
  afterAll(async () => {
    await t?.stop()
    chain?.stop()
  })

  async function payee() {
    const org = await x402Org()
    const wallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, org, wallet)
    return { org, wallet, address: await managedAddress(t.ctx, org.orgId) }
  }

  const challengeFor = async (from: string, key: string, to: string, body: Record<string, unknown> = {}, idem?: string) =>
    t.request('POST', '/v1/x402/email-challenges', {
      key,
      body: { from, to, amount: '20000', network: 'base-sepolia', description: 'a report', ...body },
      headers: idem ? { 'idempotency-key': idem } : {},
    })

  const interaction = async (key: string, id: string) => expectOk(await t.request('GET', `/v1/x402/interactions/${encodeURIComponent(id)}`, { key }))

  /** Two organizations of this service: the challenge arrives in the payer's inbox by local delivery. */
  async function onNet() {
    const p = await payee()
    const payerOrg = await x402Org()
    const payerAddress = await managedAddress(t.ctx, payerOrg.orgId)
    const payerKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(payerKey).address, 1_000_000n)
    const created = expectOk(await challengeFor(p.address, p.org.key, payerAddress), 201)
    const [received] = await stepsReceived(payerOrg.orgId)
    return { p, payerOrg, payerAddress, payerKey, created, received: received! }
  }

  const replyWith = (org: { key: string }, from: string, emailId: string, step: unknown, to?: string) =>
    t.request('POST', '/v1/send-mail', {
      key: org.key,
      body: {
        from,
        ...(to && { to }),
        in_reply_to_email_id: emailId,
        subject: 'payment',
        body_text: 'attached',
        attachments: [{ filename: 'interaction.json', content_type: 'application/json', content: b64(step) }],
      },
    })

  test('the challenge goes out as DKIM-signed mail with an interaction.json step; Idempotency-Key replays without a second send', async () => {
    const p = await payee()
    const payerOrg = await x402Org()
    const payerAddress = await managedAddress(t.ctx, payerOrg.orgId)
    const first = expectOk(await challengeFor(p.address, p.org.key, payerAddress, {}, 'k-1'), 201)
    expect(first.interaction_id).toMatch(new RegExp(`^[0-9a-f-]{36}@${t.ctx.config.MANAGED_DOMAIN.replaceAll('.', '\\.')}$`))
    expect(first.challenge).toMatchObject({ id: first.challenge_id, status: 'pending', amount: '20000', pay_to: p.wallet.address })
    const again = expectOk(await challengeFor(p.address, p.org.key, payerAddress, {}, 'k-1'), 201)
    expect(again.interaction_id).toBe(first.interaction_id)
    const steps = await stepsReceived(payerOrg.orgId)
    expect(steps).toHaveLength(1)
    const step = steps[0]!.step
    expect(step).toMatchObject({
      interaction_version: 1,
      interaction_id: first.interaction_id,
      protocol: 'x402.payment',
      protocol_version: 1,
      step: 'challenge',
      prev_step_id: null,
    })
    expect(step.step_id).toBe(first.challenge.nonce_binding.challenge_step_id)
    expect(step.payload.authorization_nonce).toBe(first.challenge.authorization_nonce)
    const [auth] = await sql<{ auth: any; text_body: string }[]>`select auth, text_body from emails where id = ${steps[0]!.emailId}`
    expect(auth!.auth.dkim.some((d: any) => d.result === 'pass' && d.signed_headers.includes('content-type'))).toBe(true)
    // the challenge and its email carry the pay link a stock x402 client can use
    expect(first.challenge.pay_url).toBe(`${t.ctx.config.PUBLIC_URL}/x402/pay/${first.challenge_id}`)
    expect(auth!.text_body).toContain(first.challenge.pay_url)
    const i = await interaction(p.org.key, first.interaction_id)
    expect(i).toMatchObject({ state: 'awaiting_payment', payer_address: payerAddress, payer_domain: t.ctx.config.MANAGED_DOMAIN, settlement: null })
    // another organization cannot read it; a sender the organization does not own is refused and leaves nothing
    expectError(await t.request('GET', `/v1/x402/interactions/${encodeURIComponent(first.interaction_id)}`, { key: payerOrg.key }), 404, 'not_found')
    const before = await sql`select count(*)::int as n from x402_challenges where org_id = ${p.org.orgId}`
    expectError(await challengeFor('someone@elsewhere.example', p.org.key, payerAddress), 403, 'cannot_send_from_domain')
    expect(await sql`select count(*)::int as n from x402_challenges where org_id = ${p.org.orgId}`).toEqual(before)
    expectError(await challengeFor(p.address, p.org.key, payerAddress, { expires_in: 10 }), 400, 'validation_error')
  })

  test('a genuine payment from the pinned payer settles once on chain and a receipt comes back in the thread; a duplicate settles nothing', async () => {
    const s = await onNet()
    // another organization on the same managed domain (aligned DKIM, wrong From) cannot pay
    const intruder = await x402Org()
    const intruderAddress = await managedAddress(t.ctx, intruder.orgId)
    const intruderKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(intruderKey).address, 1_000_000n)
    const ambush = paymentStep(s.received.step, await signedFor(intruderKey, s.received.step))
    expectOk(
      await t.request('POST', '/v1/send-mail', {
        key: intruder.key,
        body: {
          from: intruderAddress,
          to: s.p.address,
          subject: 'pay',
          body_text: 'x',
          attachments: [{ filename: 'interaction.json', content_type: 'application/json', content: b64(ambush) }],
        },
      }),
    )
    await runStepJobs(t)
    let i = await interaction(s.p.org.key, s.created.interaction_id)
    expect(i.state).toBe('awaiting_payment')
    expect(i.steps.find((x: any) => x.direction === 'received')).toMatchObject({ accepted: false, reasons: ['identity_mismatch'] })

    const step = paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step))
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, step))
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, { ...step, step_id: crypto.randomUUID() }))
    await runStepJobs(t)
    i = await interaction(s.p.org.key, s.created.interaction_id)
    expect(i).toMatchObject({ state: '$completed', outcome: 'settled', payer_org: s.payerOrg.orgId })
    expect(i.settlement.settle_tx).toMatch(/^0x[0-9a-f]{64}$/)
    expect(await chain.balance(s.p.wallet.address)).toBe(20000n)
    const back = (await stepsReceived(s.payerOrg.orgId)).map(x => x.step)
    // the one trust notice went to the pinned payer (never to the intruder), then the receipt
    expect(back.map(x => x.step)).toEqual(['challenge', 'reject', 'receipt'])
    expect(back[1].payload).toMatchObject({ reason: 'identity_mismatch', reasons: ['identity_mismatch'] })
    expect(back[2].payload).toMatchObject({ status: 'settled', settle_tx: i.settlement.settle_tx })
    expect(await stepsReceived(intruder.orgId)).toHaveLength(0)
  })

  test('a tampered amount is rejected: $failed with reasons, a reject step, nothing on chain', async () => {
    const s = await onNet()
    const step = paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step, a => void (a.value = '1')))
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, step))
    await runStepJobs(t)
    const i = await interaction(s.p.org.key, s.created.interaction_id)
    expect(i).toMatchObject({ state: '$failed', outcome: 'rejected', failure_reason: 'amount_mismatch' })
    expect(await chain.balance(s.p.wallet.address)).toBe(0n)
    const back = (await stepsReceived(s.payerOrg.orgId)).map(x => x.step)
    expect(back.at(-1)).toMatchObject({ step: 'reject', payload: { reason: 'amount_mismatch' } })
  })

  test('decline ends it $completed without payment; camelCase step keys are refused and change nothing', async () => {
    const s = await onNet()
    const camel = { ...paymentStep(s.received.step, {}), prevStepId: s.received.step.step_id }
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, camel))
    await runStepJobs(t)
    expect((await interaction(s.p.org.key, s.created.interaction_id)).state).toBe('awaiting_payment')
    expectOk(
      await replyWith(
        s.payerOrg,
        s.payerAddress,
        s.received.emailId,
        paymentStep(s.received.step, {}, { step: 'decline', payload: { reason: 'too expensive' } }),
      ),
    )
    await runStepJobs(t)
    const i = await interaction(s.p.org.key, s.created.interaction_id)
    expect(i).toMatchObject({ state: '$completed', outcome: 'declined', settlement: null })
  })

  test('a tampered nonce is rejected with nonce_mismatch; nothing moves', async () => {
    const s = await onNet()
    const step = paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step, a => void (a.nonce = `0x${'11'.repeat(32)}`)))
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, step))
    await runStepJobs(t)
    const i = await interaction(s.p.org.key, s.created.interaction_id)
    expect(i).toMatchObject({ state: '$failed', outcome: 'rejected' })
    expect(i.reasons).toContain('nonce_mismatch')
    expect(await chain.balance(s.p.wallet.address)).toBe(0n)
  })

  test.skipIf(!onServer)(
    'each settle cap, set with bin/admin x402 set-caps, rejects the payment that would exceed it: $failed with the cap reason, nothing on chain',
    async () => {
      /** a second challenge of the same payee to the same payer, as received */
      async function again(s: Awaited<ReturnType<typeof onNet>>) {
        const created = expectOk(await challengeFor(s.p.address, s.p.org.key, s.payerAddress), 201)
        return { created, received: (await stepsReceived(s.payerOrg.orgId)).find(x => x.step.interaction_id === created.interaction_id)! }
      }
      const pay = async (s: Awaited<ReturnType<typeof onNet>>, created: any, received: any) => {
        expectOk(await replyWith(s.payerOrg, s.payerAddress, received.emailId, paymentStep(received.step, await signedFor(s.payerKey, received.step))))
        await runStepJobs(t)
        return interaction(s.p.org.key, created.interaction_id)
      }
      const cases: [string, [string, string, string]][] = [
        ['amount_exceeds_per_settle_ceiling', ['default', 'default', '10000']],
        ['settle_daily_cap_exceeded', ['30000', 'default', 'default']],
        ['settle_monthly_cap_exceeded', ['default', '30000', 'default']],
      ]
      for (const [reason, caps] of cases) {
        const s = await onNet()
        expect(await adminSetCaps(s.p.org.orgId, ...caps)).toMatchObject({ org_id: s.p.org.orgId, per_settle: caps[2] === 'default' ? '10000000' : caps[2] })
        let refused = { created: s.created, received: s.received }
        if (reason !== 'amount_exceeds_per_settle_ceiling') {
          // 20000 of 30000 settles; the next 20000 would exceed the day's or the month's cap
          expect(await pay(s, s.created, s.received)).toMatchObject({ state: '$completed', outcome: 'settled' })
          refused = await again(s)
        }
        const i = await pay(s, refused.created, refused.received)
        expect(i).toMatchObject({ state: '$failed', outcome: 'rejected', failure_reason: reason, reasons: [reason] })
        expect(await chain.balance(s.p.wallet.address)).toBe(reason === 'amount_exceeds_per_settle_ceiling' ? 0n : 20000n)
        expect((await stepsReceived(s.payerOrg.orgId)).at(-1)!.step).toMatchObject({ step: 'reject', payload: { reason, reasons: [reason] } })
      }
    },
  )

  test('past expires_at the interaction is $expired and a late payment is rejected with challenge_expired', async () => {
    const s = await onNet()
    await sql`update x402_challenges set expires_at = now() - interval '1 second' where id = ${s.created.challenge_id}`
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step))))
    await runStepJobs(t)
    const i = await interaction(s.p.org.key, s.created.interaction_id)
    expect(i).toMatchObject({ state: '$expired', outcome: 'expired', settlement: null })
    expect(await chain.balance(s.p.wallet.address)).toBe(0n)
    expect((await stepsReceived(s.payerOrg.orgId)).at(-1)!.step).toMatchObject({ step: 'reject', payload: { reason: 'challenge_expired' } })
  })

  test('an outside payer over SMTP: no DKIM, Content-Type not signed, a body length tag, a sibling, a parent domain are refused (one notice); a subdomain signature then settles', async () => {
    const p = await payee()
    const payerKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(payerKey).address, 1_000_000n)
    const created = expectOk(await challengeFor(p.address, p.org.key, 'ap@payer.example'), 201)
    const payer = outsidePayer(t, 'ap@payer.example', ['sub.payer.example', 'evilpayer.example', 'example'])
    const challenge = await payer.challenge()
    const genuine = paymentStep(challenge.step, await signedFor(payerKey, challenge.step))
    const reply = () => payer.message(p.address, genuine, challenge.messageId)
    await payer.deliver(p.address, reply())
    await payer.deliver(p.address, await payer.sign(reply(), 'payer.example', { headerList: 'From:To:Subject' }))
    // l=: the signature covers the body's first bytes only (here all of them, but anything could follow)
    await payer.deliver(p.address, await payer.sign(reply(), 'payer.example', { maxBodyLength: 100_000 }))
    await payer.deliver(p.address, await payer.sign(reply(), 'evilpayer.example'))
    await payer.deliver(p.address, await payer.sign(reply(), 'example'))
    await runStepJobs(t)
    let i = await interaction(p.org.key, created.interaction_id)
    expect(i.state).toBe('awaiting_payment')
    expect(
      i.steps
        .filter((x: any) => x.direction === 'received')
        .map((x: any) => x.reasons.join())
        .sort(),
    ).toEqual(['dkim_required', 'dkim_required', 'dkim_required', 'identity_mismatch', 'identity_mismatch'])
    // the body-length signature did pass DKIM: refused for its l= tag, not for a failed verification
    const stored = await sql<
      { auth: any; headers: { name: string; value: string }[] }[]
    >`select auth, headers from emails where org_id = ${p.org.orgId} and direction = 'inbound'`
    const limited = stored.filter(e => bodyLengthLimited(e.headers).size > 0)
    expect(limited).toHaveLength(1)
    expect(limited[0]!.auth.dkim).toEqual([
      expect.objectContaining({ result: 'pass', domain: 'payer.example', signed_headers: expect.arrayContaining(['from', 'content-type']) }),
    ])
    const notices = await sql`select 1 from outbox_messages where rcpt = 'ap@payer.example'`
    expect(notices).toHaveLength(2) // the challenge and one reject notice

    const good = await payer.sign(reply(), 'sub.payer.example')
    await Promise.all([payer.deliver(p.address, good), payer.deliver(p.address, good)])
    await runStepJobs(t)
    i = await interaction(p.org.key, created.interaction_id)
    expect(i).toMatchObject({ state: '$completed', outcome: 'settled', payer_org: null })
    expect(await chain.balance(p.wallet.address)).toBe(20000n)
    expect(await sql`select 1 from outbox_messages where rcpt = 'ap@payer.example'`).toHaveLength(3)
  })
})
