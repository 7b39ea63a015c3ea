/**
 * Email-native x402 end to end on anvil: the payee's challenge goes out as real mail, the payer
 * signs with the `x402` reference client and replies in the thread; the service verifies,
 * settles on chain and answers with a receipt. Two organizations of this service exchange mail by
 * local delivery (DKIM by our own keys, verified by mailauth); an outside payer's replies arrive
 * over the SMTP listener, signed by keys published in the test's DNS.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { dkimSign } from 'mailauth/lib/dkim/sign'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { Hex } from 'viem'
import { testSql } from '../../helpers/app'
import { expectError, expectOk } from '../../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../../helpers/mail'
import { runNow } from '../../../src/jobs/run'
import { inboundStepJob } from '../../../src/x402/email/inbound'
import { STEP_KIND } from '../../../src/x402/email/step-mail'
import { anvilBinary, startChain, type Chain } from '../anvil'
import { signPayment } from '../payer'
import { registerPayout, x402Org } from '../helpers'
import { setSettleCaps } from '../../../src/x402/caps'

const sql = await testSql()

/** Runs the pending step jobs (what a worker would), all at once. */
async function runStepJobs(t: InboundHarness) {
  const jobs = await sql<{ id: string }[]>`select id from jobs where kind = ${STEP_KIND} and locked_by is null and attempts = 0`
  await Promise.all(jobs.map(j => runNow(t.ctx, inboundStepJob, j.id)))
}

/** The interaction.json parts of the mail an organization received, oldest first. */
async function stepsReceived(orgId: string) {
  const rows = await sql<{ id: string; raw: Buffer }[]>`
    select e.id, c.raw from emails e join email_contents c on c.email_id = e.id
     where e.org_id = ${orgId} and e.direction = 'inbound' order by e.received_at, e.id`
  const { attachmentContents } = await import('../../../src/mail/inbound/parse')
  const out: { emailId: string; step: any }[] = []
  for (const r of rows) {
    const part = (await attachmentContents(new Uint8Array(r.raw))).find(a => a.filename === 'interaction.json')
    if (part) out.push({ emailId: r.id, step: JSON.parse(new TextDecoder().decode(part.content)) })
  }
  return out
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64')

function paymentStep(challenge: any, payment: unknown, overrides: Record<string, unknown> = {}) {
  return {
    interaction_version: 1, interaction_id: challenge.interaction_id, protocol: 'x402.payment', protocol_version: 1, step: 'payment',
    step_id: crypto.randomUUID(), prev_step_id: challenge.step_id, expires_at: null, payload: { payment }, ...overrides,
  }
}

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
    t.request('POST', '/v1/x402/email-challenges', { key, body: { from, to, amount: '20000', network: 'base-sepolia', description: 'a report', ...body }, headers: idem ? { 'idempotency-key': idem } : {} })

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
        from, ...(to && { to }), in_reply_to_email_id: emailId, subject: 'payment', body_text: 'attached',
        attachments: [{ filename: 'interaction.json', content_type: 'application/json', content: b64(step) }],
      },
    })

  async function signedFor(payerKey: Hex, challengeStep: any, edit?: (a: Record<string, string>) => void) {
    return signPayment(payerKey, { payment_requirements: challengeStep.payload.payment_requirements, authorization_nonce: challengeStep.payload.authorization_nonce }, edit)
  }

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
    expect(step).toMatchObject({ interaction_version: 1, interaction_id: first.interaction_id, protocol: 'x402.payment', protocol_version: 1, step: 'challenge', prev_step_id: null })
    expect(step.step_id).toBe(first.challenge.nonce_binding.challenge_step_id)
    expect(step.payload.authorization_nonce).toBe(first.challenge.authorization_nonce)
    const [auth] = await sql<{ auth: any }[]>`select auth from emails where id = ${steps[0]!.emailId}`
    expect(auth!.auth.dkim.some((d: any) => d.result === 'pass' && d.signed_headers.includes('content-type'))).toBe(true)
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
    expectOk(await t.request('POST', '/v1/send-mail', { key: intruder.key, body: { from: intruderAddress, to: s.p.address, subject: 'pay', body_text: 'x', attachments: [{ filename: 'interaction.json', content_type: 'application/json', content: b64(ambush) }] } }))
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
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, paymentStep(s.received.step, {}, { step: 'decline', payload: { reason: 'too expensive' } })))
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

  test("a payment over the payee's per-settle ceiling (set by the operator) is a cap reject: $failed, nothing on chain", async () => {
    const s = await onNet()
    await setSettleCaps(sql, s.p.org.orgId, { daily: 'default', monthly: 'default', per_settle: '10000' })
    expectOk(await replyWith(s.payerOrg, s.payerAddress, s.received.emailId, paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step))))
    await runStepJobs(t)
    const i = await interaction(s.p.org.key, s.created.interaction_id)
    expect(i).toMatchObject({ state: '$failed', failure_reason: 'amount_exceeds_per_settle_ceiling' })
    expect(await chain.balance(s.p.wallet.address)).toBe(0n)
    expect((await stepsReceived(s.payerOrg.orgId)).at(-1)!.step).toMatchObject({ step: 'reject', payload: { reason: 'amount_exceeds_per_settle_ceiling' } })
  })

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

  test('an outside payer over SMTP: no DKIM, Content-Type not signed, a sibling, a parent domain are refused (one notice); a subdomain signature then settles', async () => {
    const p = await payee()
    const payerKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(payerKey).address, 1_000_000n)
    const created = expectOk(await challengeFor(p.address, p.org.key, 'ap@payer.example'), 201)
    const [out] = await sql<{ raw: string; message_id: string }[]>`select raw, message_id from outbox_messages where rcpt = 'ap@payer.example' order by created_at limit 1`
    const { attachmentContents } = await import('../../../src/mail/inbound/parse')
    const challengeStep = JSON.parse(new TextDecoder().decode((await attachmentContents(new TextEncoder().encode(out!.raw))).find(a => a.filename === 'interaction.json')!.content))

    const keys: Record<string, string> = {}
    for (const domain of ['payer.example', 'sub.payer.example', 'evilpayer.example', 'example']) {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
      t.dns[`sel._domainkey.${domain}`] = { TXT: [[`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]] }
      keys[domain] = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
    }
    const boundary = 'b1'
    const message = (step: unknown) =>
      [
        'From: ap@payer.example', `To: ${p.address}`, 'Subject: payment', `Message-ID: <${crypto.randomUUID()}@payer.example>`, `In-Reply-To: ${out!.message_id}`,
        'MIME-Version: 1.0', `Content-Type: multipart/mixed; boundary="${boundary}"`, '',
        `--${boundary}`, 'Content-Type: text/plain', '', 'paying', `--${boundary}`,
        'Content-Type: application/json; name="interaction.json"', 'Content-Disposition: attachment; filename="interaction.json"', 'Content-Transfer-Encoding: base64', '',
        b64(step), `--${boundary}--`, '',
      ].join('\r\n')
    const sign = async (raw: string, domain: string, headerList?: string) =>
      (await dkimSign(raw, { canonicalization: 'relaxed/relaxed', ...(headerList && { headerList }), signatureData: [{ signingDomain: domain, selector: 'sel', privateKey: keys[domain] }] } as never)).signatures + raw
    const deliver = (raw: string) => t.transport.sendMail({ envelope: { from: 'ap@payer.example', to: [p.address] }, raw })

    const payment = await signPayment(payerKey, { payment_requirements: challengeStep.payload.payment_requirements, authorization_nonce: challengeStep.payload.authorization_nonce })
    const genuine = paymentStep(challengeStep, payment)
    await deliver(message(genuine))
    await deliver(await sign(message(genuine), 'payer.example', 'From:To:Subject'))
    await deliver(await sign(message(genuine), 'evilpayer.example'))
    await deliver(await sign(message(genuine), 'example'))
    await runStepJobs(t)
    let i = await interaction(p.org.key, created.interaction_id)
    expect(i.state).toBe('awaiting_payment')
    expect(i.steps.filter((x: any) => x.direction === 'received').map((x: any) => x.reasons.join()).sort()).toEqual(['dkim_required', 'dkim_required', 'identity_mismatch', 'identity_mismatch'])
    const notices = await sql`select 1 from outbox_messages where rcpt = 'ap@payer.example'`
    expect(notices).toHaveLength(2) // the challenge and one reject notice

    const good = await sign(message(genuine), 'sub.payer.example')
    await Promise.all([deliver(good), deliver(good)])
    await runStepJobs(t)
    i = await interaction(p.org.key, created.interaction_id)
    expect(i).toMatchObject({ state: '$completed', outcome: 'settled', payer_org: null })
    expect(await chain.balance(p.wallet.address)).toBe(20000n)
    expect(await sql`select 1 from outbox_messages where rcpt = 'ap@payer.example'`).toHaveLength(3)
  })
})
