/**
 * Email-native x402 rules around the happy path, on anvil with two organizations of this service
 * exchanging real mail: a payment must answer the challenge message (the thread), the
 * interactions_enabled gate (on the routes and on replies arriving for a payee that lost it), a
 * concurrent duplicate of an email challenge with one Idempotency-Key, expiry by the expire job,
 * and which organization the pinned payer address resolves to.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createOrg, testSql } from '../../helpers/app'
import { expectError, expectOk } from '../../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../../helpers/mail'
import { markDomainVerified } from '../../../src/domains/service'
import { runNow } from '../../../src/jobs/run'
import { expireJob, payerOrgOf } from '../../../src/x402/email/inbound'
import { EXPIRE_KIND } from '../../../src/x402/email/service'
import { anvilBinary, startChain, type Chain } from '../anvil'
import { registerPayout, x402Org } from '../helpers'
import { b64, paymentStep, runStepJobs, signedFor, stepsReceived } from './helpers'
import { testDatabase } from '../../helpers/database'

const sql = await testSql()
// The embedded fallback serves one connection: a test that holds a transaction open while the
// service works needs a server.
const onServer = (await testDatabase()).kind === 'postgres'

describe.skipIf(!anvilBinary())('email-native x402 rules', () => {
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

  const challengeFor = (from: string, key: string, to: string, headers: Record<string, string> = {}) =>
    t.request('POST', '/v1/x402/email-challenges', { key, headers, body: { from, to, amount: '20000', network: 'base-sepolia', description: 'a report' } })
  const interaction = async (key: string, id: string) => expectOk(await t.request('GET', `/v1/x402/interactions/${encodeURIComponent(id)}`, { key }))
  const send = (key: string, body: Record<string, unknown>) =>
    t.request('POST', '/v1/send-mail', { key, body: { subject: 'payment', body_text: 'attached', ...body } })
  const stepAttachment = (step: unknown) => [{ filename: 'interaction.json', content_type: 'application/json', content: b64(step) }]

  /** A payee with a payout wallet, a funded payer organization, and a challenge received by the payer. */
  async function onNet(payeeOrg?: Awaited<ReturnType<typeof x402Org>>) {
    const payee = payeeOrg ?? (await x402Org())
    const wallet = privateKeyToAccount(generatePrivateKey())
    await registerPayout(t, payee, wallet)
    const payeeAddress = await managedAddress(t.ctx, payee.orgId)
    const payer = await x402Org()
    const payerAddress = await managedAddress(t.ctx, payer.orgId)
    const payerKey = generatePrivateKey()
    await chain.mint(privateKeyToAccount(payerKey).address, 1_000_000n)
    const created = expectOk(await challengeFor(payeeAddress, payee.key, payerAddress), 201)
    const received = (await stepsReceived(payer.orgId)).find(x => x.step.interaction_id === created.interaction_id)!
    return { payee, wallet, payeeAddress, payer, payerAddress, payerKey, created, received }
  }

  test('a payment that does not answer the challenge message is not_in_thread: recorded, one reject notice, nothing moves; the threaded reply settles', async () => {
    const s = await onNet()
    const step = paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step))
    // a new message (no In-Reply-To, no References), DKIM-signed by the payer's own domain, from the pinned address
    expectOk(await send(s.payer.key, { from: s.payerAddress, to: s.payeeAddress, attachments: stepAttachment(step) }))
    await runStepJobs(t)
    let i = await interaction(s.payee.key, s.created.interaction_id)
    expect(i.state).toBe('awaiting_payment')
    expect(i.steps.filter((x: any) => x.direction === 'received')).toEqual([
      expect.objectContaining({ step: 'payment', accepted: false, reasons: ['not_in_thread'] }),
    ])
    expect(await chain.balance(s.wallet.address)).toBe(0n)
    expect((await stepsReceived(s.payer.orgId)).at(-1)!.step).toMatchObject({
      step: 'reject',
      payload: { reason: 'not_in_thread', reasons: ['not_in_thread'] },
    })
    // a decline outside the thread ends nothing either
    expectOk(
      await send(s.payer.key, {
        from: s.payerAddress,
        to: s.payeeAddress,
        attachments: stepAttachment(paymentStep(s.received.step, {}, { step: 'decline', payload: { reason: 'no' } })),
      }),
    )
    await runStepJobs(t)
    expect((await interaction(s.payee.key, s.created.interaction_id)).state).toBe('awaiting_payment')

    // the same authorization in a reply to the challenge message settles
    expectOk(
      await send(s.payer.key, {
        from: s.payerAddress,
        in_reply_to_email_id: s.received.emailId,
        attachments: stepAttachment({ ...step, step_id: crypto.randomUUID() }),
      }),
    )
    await runStepJobs(t)
    i = await interaction(s.payee.key, s.created.interaction_id)
    expect(i).toMatchObject({ state: '$completed', outcome: 'settled' })
    expect(await chain.balance(s.wallet.address)).toBe(20000n)
  })

  test('steps are parsed strictly: an unknown step is ignored, a wrong prev_step_id or a malformed step changes nothing; a genuine payment then settles', async () => {
    const s = await onNet()
    const reply = (step: unknown) => send(s.payer.key, { from: s.payerAddress, in_reply_to_email_id: s.received.emailId, attachments: stepAttachment(step) })
    const payment = await signedFor(s.payerKey, s.received.step)
    expectOk(await reply(paymentStep(s.received.step, payment, { step: 'refund', payload: {} })))
    expectOk(await reply(paymentStep(s.received.step, payment, { prev_step_id: crypto.randomUUID() })))
    expectOk(await reply(paymentStep(s.received.step, payment, { interaction_version: 2 })))
    expectOk(await reply(paymentStep(s.received.step, payment, { surprise: true })))
    await runStepJobs(t)
    const i = await interaction(s.payee.key, s.created.interaction_id)
    expect(i.state).toBe('awaiting_payment')
    expect(
      i.steps
        .filter((x: any) => x.direction === 'received')
        .map((x: any) => x.reasons[0])
        .sort(),
    ).toEqual(['malformed_step', 'malformed_step', 'prev_step_mismatch', 'unknown_step'])
    expect(i.steps.filter((x: any) => x.direction === 'received').every((x: any) => !x.accepted)).toBe(true)
    // malformed steps are answered (reason and the detail); an unknown step and a wrong prev_step_id are not
    const rejects = (await stepsReceived(s.payer.orgId)).filter(x => x.step.step === 'reject').map(x => x.step.payload)
    expect(rejects).toHaveLength(2)
    expect(rejects.every(r => r.reason === 'malformed_step')).toBe(true)
    expect(rejects.map(r => r.detail).sort()).toEqual(['interaction_version: must be 1', 'surprise: unknown field'])
    expect(await chain.balance(s.wallet.address)).toBe(0n)
    expectOk(await reply(paymentStep(s.received.step, payment)))
    await runStepJobs(t)
    expect(await interaction(s.payee.key, s.created.interaction_id)).toMatchObject({ state: '$completed', outcome: 'settled' })
    expect(await chain.balance(s.wallet.address)).toBe(20000n)
  })

  test('a step written entirely in camelCase is found through the thread and answered with a camel_case_keys reject; nothing moves', async () => {
    const s = await onNet()
    const snake = paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step))
    const camel = {
      interactionVersion: 1,
      interactionId: snake.interaction_id,
      protocol: 'x402.payment',
      protocolVersion: 1,
      step: 'payment',
      stepId: snake.step_id,
      prevStepId: snake.prev_step_id,
      expiresAt: null,
      payload: snake.payload,
    }
    expectOk(await send(s.payer.key, { from: s.payerAddress, in_reply_to_email_id: s.received.emailId, attachments: stepAttachment(camel) }))
    await runStepJobs(t)
    const i = await interaction(s.payee.key, s.created.interaction_id)
    expect(i.state).toBe('awaiting_payment')
    expect(i.steps.filter((x: any) => x.direction === 'received')).toEqual([expect.objectContaining({ accepted: false, reasons: ['camel_case_keys'] })])
    const reject = (await stepsReceived(s.payer.orgId)).at(-1)!.step
    expect(reject).toMatchObject({
      step: 'reject',
      interaction_id: s.created.interaction_id,
      payload: { reason: 'camel_case_keys', reasons: ['camel_case_keys'] },
    })
    expect(reject.payload.detail).toStartWith('interactionVersion: ')
    expect(await chain.balance(s.wallet.address)).toBe(0n)
  })

  test('interactions_enabled: without it the email routes are 403 feature_disabled; replies for a payee that lost it are recorded and do nothing', async () => {
    const org = await createOrg({ plan: 'developer' })
    await sql`update orgs set extra_entitlements = ${['x402_payments']} where id = ${org.orgId}`
    const address = await managedAddress(t.ctx, org.orgId)
    const res = await challengeFor(address, org.key, 'someone@payer.example')
    expectError(res, 403, 'feature_disabled')
    expect(res.body.error.details).toMatchObject({ missing_entitlement: 'interactions_enabled' })
    expectError(
      await t.request('GET', `/v1/x402/interactions/${encodeURIComponent(`${crypto.randomUUID()}@example.test`)}`, { key: org.key }),
      403,
      'feature_disabled',
    )
    // x402_payments alone still opens the API objects
    expectError(await t.request('POST', '/v1/x402/challenges', { key: org.key, body: { amount: '1000', network: 'base-sepolia' } }), 422, 'no_payout_address')
    expect(await sql`select 1 from x402_challenges where org_id = ${org.orgId}`).toHaveLength(0)

    // a challenge sent while entitled, paid after the payee moved to a plan without the entitlements
    const s = await onNet()
    await sql`update orgs set plan = 'developer' where id = ${s.payee.orgId}`
    expectOk(
      await send(s.payer.key, {
        from: s.payerAddress,
        in_reply_to_email_id: s.received.emailId,
        attachments: stepAttachment(paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step))),
      }),
    )
    await runStepJobs(t)
    const [row] = await sql<{ state: string }[]>`select state from x402_interactions where id = ${s.created.interaction_id}`
    expect(row!.state).toBe('awaiting_payment')
    const [received] = await sql<
      { accepted: boolean; reasons: string[] }[]
    >`select accepted, reasons from x402_interaction_steps where interaction_id = ${s.created.interaction_id} and direction = 'received'`
    expect(received).toEqual({ accepted: false, reasons: ['feature_disabled'] })
    expect(await chain.balance(s.wallet.address)).toBe(0n)
  })

  test.skipIf(!onServer)('a concurrent duplicate with the same Idempotency-Key that loses the race gets 409 conflict; one challenge, one message', async () => {
    const payee = await x402Org()
    await registerPayout(t, payee, privateKeyToAccount(generatePrivateKey()))
    const payeeAddress = await managedAddress(t.ctx, payee.orgId)
    const payer = await x402Org()
    const payerAddress = await managedAddress(t.ctx, payer.orgId)

    // the original holds the key's lock (as a request in flight does): the duplicate loses at once
    const key = `race-${crypto.randomUUID()}`
    const lost = await sql.begin(async tx => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`org:${payee.orgId}:x402.email-challenges\n${key}`}, 0))`
      return challengeFor(payeeAddress, payee.key, payerAddress, { 'idempotency-key': key })
    })
    expectError(lost, 409, 'conflict')
    expect(lost.body.error.details).toMatchObject({ reason: 'idempotency_request_in_progress' })
    expect(await sql`select 1 from x402_challenges where org_id = ${payee.orgId}`).toHaveLength(0)

    // several at once: each answers the one original or 409; one challenge and one message exist
    const results = await Promise.all(Array.from({ length: 4 }, () => challengeFor(payeeAddress, payee.key, payerAddress, { 'idempotency-key': key })))
    const created = results.filter(r => r.status === 201)
    expect(created.length).toBeGreaterThanOrEqual(1)
    for (const r of results) if (r.status !== 201) expectError(r, 409, 'conflict')
    expect(new Set(created.map(r => r.body.data.interaction_id)).size).toBe(1)
    expect(await sql`select 1 from x402_challenges where org_id = ${payee.orgId}`).toHaveLength(1)
    expect(await stepsReceived(payer.orgId)).toHaveLength(1)
    const [steps] = await sql<
      { n: number }[]
    >`select count(*)::int as n from x402_interaction_steps where interaction_id = ${created[0]!.body.data.interaction_id}`
    expect(steps!.n).toBe(1)
  })

  test('the expire job ends an interaction past expires_at as $expired (and leaves one not yet due); a late payment gets a challenge_expired reject', async () => {
    const s = await onNet()
    const [job] = await sql<
      { id: string; run_at: Date }[]
    >`select id, run_at from jobs where kind = ${EXPIRE_KIND} and payload->>'interaction_id' = ${s.created.interaction_id}`
    expect(job!.run_at.toISOString()).toBe(s.created.challenge.expires_at)
    // run before its time (a worker with a fast clock): nothing changes, and it is not an error
    await expireJob.handle(t.ctx, { interaction_id: s.created.interaction_id }, undefined as never)
    expect((await sql`select state from x402_interactions where id = ${s.created.interaction_id}`)[0]!.state).toBe('awaiting_payment')

    await sql`update x402_challenges set expires_at = now() - interval '1 second' where id = ${s.created.challenge_id}`
    await runNow(t.ctx, expireJob, job!.id)
    // read from the table: the interaction read would expire it by itself
    const [row] = await sql<
      { state: string; outcome: string; failure_reason: string }[]
    >`select state, outcome, failure_reason from x402_interactions where id = ${s.created.interaction_id}`
    expect(row).toEqual({ state: '$expired', outcome: 'expired', failure_reason: 'challenge_expired' })

    expectOk(
      await send(s.payer.key, {
        from: s.payerAddress,
        in_reply_to_email_id: s.received.emailId,
        attachments: stepAttachment(paymentStep(s.received.step, await signedFor(s.payerKey, s.received.step))),
      }),
    )
    await runStepJobs(t)
    expect(await interaction(s.payee.key, s.created.interaction_id)).toMatchObject({ state: '$expired', settlement: null })
    expect((await stepsReceived(s.payer.orgId)).at(-1)!.step).toMatchObject({ step: 'reject', payload: { reason: 'challenge_expired' } })
    expect(await chain.balance(s.wallet.address)).toBe(0n)
  })

  test('payer_org: the organization hosting the pinned address as inbound mail is routed (a managed inbox by address, a verified domain), else null', async () => {
    const inboxOrg = await createOrg()
    const inbox = await managedAddress(t.ctx, inboxOrg.orgId)
    const domainOrg = await createOrg()
    const domain = `payer-${crypto.randomUUID().slice(0, 8)}.example`
    await markDomainVerified(sql, t.ctx.keys, t.ctx.config.MANAGED_DOMAIN, domainOrg.orgId, domain)
    const pending = `pending-${crypto.randomUUID().slice(0, 8)}.example`
    await sql`insert into domains (id, org_id, name, verification_token, dkim_selector, dkim_private_sealed, dkim_public)
              values (${crypto.randomUUID()}, ${domainOrg.orgId}, ${pending}, 'x', 'sel', '\\x00', 'x')`
    expect(await payerOrgOf(t.ctx, inbox)).toBe(inboxOrg.orgId)
    expect(await payerOrgOf(t.ctx, `anyone@${domain}`)).toBe(domainOrg.orgId)
    // another address of the shared managed domain is nobody's, whoever holds inboxes there
    expect(await payerOrgOf(t.ctx, `nobody-${crypto.randomUUID().slice(0, 8)}@${t.ctx.config.MANAGED_DOMAIN}`)).toBeNull()
    expect(await payerOrgOf(t.ctx, `x@${pending}`)).toBeNull()
    expect(await payerOrgOf(t.ctx, `x@sub.${domain}`)).toBeNull()
    expect(await payerOrgOf(t.ctx, 'ap@payer.example')).toBeNull()
  })
})
