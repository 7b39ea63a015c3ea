/**
 * The SDK's verifyWebhook on real deliveries: mail received over SMTP, delivered by the worker
 * to a loopback receiver, verified there with the organization's secret, by either signature
 * scheme; a changed byte, a wrong secret or an old timestamp is refused.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { verifyWebhook, WebhookVerificationError } from '@agent-mail/sdk'
import { createOrg, testSql } from '../helpers/app'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Received, type Receiver } from '../helpers/receiver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'

let h: InboundHarness
let worker: Worker
let receiver: Receiver
let secret: string
let delivery: Received

beforeAll(async () => {
  h = await inboundHarness({ WEBHOOK_ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '1,1', WEBHOOK_TIMEOUT_MS: '10000' })
  worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  receiver = startReceiver()
  const org = await createOrg()
  const address = await managedAddress(h.ctx, org.orgId)
  const sql = await testSql()
  const id = randomUUIDv7()
  await sql`insert into endpoints (id, org_id, kind, url, enabled, is_route_target, rules)
            values (${id}, ${org.orgId}, 'http', ${receiver.url(`/${id}`)}, true, false, '{}'::jsonb)`
  secret = (await h.request('GET', '/v1/account/webhook-secret', { key: org.key })).body.data.secret
  await h.transport.sendMail({ from: 'Sam <sam@sender.example>', to: address, subject: 'Signed', text: 'verify me' })
  delivery = (await receiver.waitFor(1, `/${id}`))[0]!
})
afterAll(async () => {
  await worker.stop(1000)
  receiver.stop()
  await h.stop()
})

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason
    throw error
  }
  return 'accepted'
}

describe('verifyWebhook', () => {
  test('accepts a real delivery and returns its typed event', async () => {
    const event = await verifyWebhook<'email.received'>(delivery.body, delivery.headers, secret)
    expect(event.event).toBe('email.received')
    expect(event.email.headers.subject).toBe('Signed')
    expect(event.id).toBe(delivery.headers['webhook-id']!)
  })

  test('accepts it by the Standard Webhooks headers alone, with a Headers object', async () => {
    const { 'service-signature': _s, 'legacy-signature': _l, ...standard } = delivery.headers
    expect(await verifyWebhook(delivery.body, new Headers(standard), secret)).toMatchObject({ event: 'email.received' })
  })

  test('accepts it with the right secret among several (a rotation on the receiving side)', async () => {
    expect(await refusal(verifyWebhook(delivery.body, delivery.headers, ['whsec_b2xkIHNlY3JldA==', secret]))).toBe('accepted')
  })

  test('refuses a changed body, a wrong secret, a stale timestamp, and a request without signature', async () => {
    const changed = delivery.body.replace('Signed', 'Signef')
    expect(await refusal(verifyWebhook(changed, delivery.headers, secret))).toBe('signature_mismatch')
    const { 'service-signature': _s, 'legacy-signature': _l, ...standard } = delivery.headers
    expect(await refusal(verifyWebhook(changed, standard, secret))).toBe('signature_mismatch')
    expect(await refusal(verifyWebhook(delivery.body, delivery.headers, 'whsec_b2xkIHNlY3JldA=='))).toBe('signature_mismatch')
    expect(await refusal(verifyWebhook(delivery.body, delivery.headers, secret, { now: Date.now() + 301_000 }))).toBe('timestamp_out_of_range')
    expect(await refusal(verifyWebhook(delivery.body, delivery.headers, secret, { now: Date.now() - 301_000 }))).toBe('timestamp_out_of_range')
    expect(await refusal(verifyWebhook(delivery.body, { 'content-type': 'application/json' }, secret))).toBe('missing_signature')
  })
})
