/** The writes that report to the feed: sends, deliveries and their outcomes, domain verification. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { markDomainVerified } from '../../src/domains/service'

let h: InboundHarness
let worker: Worker
let receiver: Receiver

beforeAll(async () => {
  h = await inboundHarness({ WEBHOOK_ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '1,1' })
  worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  receiver = startReceiver()
})
afterAll(async () => {
  await worker.stop(1000)
  receiver.stop()
  await h.stop()
})

type Change = { id: string; type: string; resource: { type: string; id: string }; data: Record<string, any> }
const cursorOf = async (key: string) => expectOk(await h.request('GET', '/v1/changes/cursor', { key })).cursor as string
const changes = async (key: string, query: string) => expectOk(await h.request('GET', `/v1/changes?${query}`, { key })) as Change[]

describe('sources of changes', () => {
  test('a send: email.sent and its state, in order', async () => {
    const org = await createOrg()
    const from = await managedAddress(h.ctx, org.orgId)
    const start = await cursorOf(org.key)
    const sent = expectOk(
      await h.request('POST', '/v1/send-mail', { key: org.key, body: { from, to: 'alice@example.com', subject: 'feed me', body_text: 'hi' } }),
    )
    const got = await changes(org.key, `cursor=${start}`)
    expect(got.map(c => c.type)).toEqual(['send.created', 'email.sent', 'send.status_changed'])
    expect(got[0]).toMatchObject({
      resource: { type: 'send', id: sent.id },
      data: { send_id: sent.id, status: 'sending', from, to: ['alice@example.com'], subject: 'feed me', scheduled_at: null },
    })
    expect(got[1]).toMatchObject({ resource: { type: 'email' }, data: { send_id: sent.id, subject: 'feed me', from } })
    expect(got[2]).toMatchObject({ resource: { type: 'send', id: sent.id }, data: { status: 'queued' } })
  })

  test('a scheduled send: created as scheduled, rescheduled, canceled; its address sees them', async () => {
    const org = await createOrg()
    const from = await managedAddress(h.ctx, org.orgId)
    const start = await cursorOf(org.key)
    const at = new Date(Date.now() + 86_400_000).toISOString()
    const sent = expectOk(
      await h.request('POST', '/v1/send-mail', { key: org.key, body: { from, to: 'bob@example.com', subject: 'later', body_text: 'hi', scheduled_at: at } }),
    )
    expect(sent.status).toBe('scheduled')
    const later = new Date(Date.now() + 2 * 86_400_000).toISOString()
    expectOk(await h.request('PATCH', `/v1/sent-emails/${sent.id}`, { key: org.key, body: { scheduled_at: later } }))
    expectOk(await h.request('POST', `/v1/sent-emails/${sent.id}/cancel`, { key: org.key }))
    const got = await changes(org.key, `cursor=${start}&types=send.*&address=${from}`)
    expect(got.map(c => c.type)).toEqual(['send.created', 'send.rescheduled', 'send.canceled'])
    for (const c of got) expect(c.resource).toEqual({ type: 'send', id: sent.id })
    expect(got[0]!.data).toMatchObject({ status: 'scheduled', scheduled_at: at, to: ['bob@example.com'], subject: 'later' })
    expect(got[1]!.data).toMatchObject({ status: 'scheduled', scheduled_at: later })
    expect(got[2]!.data).toMatchObject({ status: 'canceled', scheduled_at: later })
    // a refused cancel changes nothing and records nothing
    expect((await h.request('POST', `/v1/sent-emails/${sent.id}/cancel`, { key: org.key })).status).toBe(409)
    expect(await changes(org.key, `cursor=${start}&types=send.*`)).toHaveLength(3)
  })

  test('a repeat stopped by its sender is send.canceled with the stop', async () => {
    const org = await createOrg()
    const from = await managedAddress(h.ctx, org.orgId)
    const at = new Date(Date.now() + 86_400_000).toISOString()
    const sent = expectOk(
      await h.request('POST', '/v1/send-mail', {
        key: org.key,
        body: { from, to: 'carol@example.com', subject: 'every hour', body_text: 'tick', scheduled_at: at, repeat: { every_minutes: 60 } },
      }),
    )
    const start = await cursorOf(org.key)
    expectOk(await h.request('PATCH', `/v1/sent-emails/${sent.id}`, { key: org.key, body: { repeat: { every_minutes: 120 } } }))
    expectOk(await h.request('PATCH', `/v1/sent-emails/${sent.id}`, { key: org.key, body: { repeat: null } }))
    const got = await changes(org.key, `cursor=${start}`)
    expect(got.map(c => c.type)).toEqual(['send.rescheduled', 'send.canceled'])
    expect(got[0]!.data).toMatchObject({ repeat_every_minutes: 120, repeat_stopped_at: null })
    expect(got[1]!.data).toMatchObject({ repeat_stopped_by: 'sender' })
    expect(got[1]!.data.repeat_stopped_at).toBeString()
  })

  test('a delivery is created with the message, skipped ones with their reason', async () => {
    const org = await createOrg()
    const address = await managedAddress(h.ctx, org.orgId)
    const sql = await testSql()
    const sending = crypto.randomUUID()
    const skipping = crypto.randomUUID()
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${sending}, ${org.orgId}, 'http', ${receiver.url(`/${sending}`)}, true, '{}')`
    // a route target for this one address, whose rules skip everything over 10 bytes
    await sql`insert into endpoints (id, org_id, kind, url, enabled, is_route_target, rules) values (${skipping}, ${org.orgId}, 'http', ${receiver.url(`/${skipping}`)}, true, true, '{"max_size_bytes": 10}')`
    const other = await managedAddress(h.ctx, org.orgId)
    await sql`insert into recipient_routes (id, org_id, pattern, endpoint_id) values (${crypto.randomUUID()}, ${org.orgId}, ${other}, ${skipping})`
    const start = await cursorOf(org.key)
    await h.transport.sendMail({ from: 'sam@sender.example', to: [address, other], subject: 'two endpoints', text: 'x' })
    const got = await changes(org.key, `cursor=${start}&types=email.received,delivery.created`)
    expect(got.map(c => c.type)).toEqual(['email.received', 'delivery.created', 'delivery.created'])
    const emailId = got[0]!.resource.id
    const byEndpoint = Object.fromEntries(got.slice(1).map(c => [c.data.endpoint_id, c]))
    expect(byEndpoint[sending]).toMatchObject({
      resource: { type: 'delivery' },
      data: { status: 'pending', email_id: emailId, event_id: got[0]!.id, event_type: 'email.received', reason: null },
    })
    expect(byEndpoint[skipping]).toMatchObject({ data: { status: 'skipped_by_rules', email_id: emailId, event_id: got[0]!.id } })
    expect(byEndpoint[skipping]!.data.reason).toStartWith('rules.max_size_bytes')
    // the change names the delivery the API lists
    for (const c of got.slice(1)) expectOk(await h.request('GET', `/v1/webhooks/deliveries/${c.resource.id}`, { key: org.key }))
  })

  test('a delivery outcome wakes a long-poll and names the event id the endpoint received', async () => {
    const org = await createOrg()
    const address = await managedAddress(h.ctx, org.orgId)
    const sql = await testSql()
    const endpointId = crypto.randomUUID()
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${endpointId}, ${org.orgId}, 'http', ${receiver.url(`/${endpointId}`)}, true, '{}')`
    const start = await cursorOf(org.key)
    const polling = h.request('GET', `/v1/changes?cursor=${start}&types=delivery.status_changed&wait=30`, { key: org.key })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'deliver me', text: 'x' })
    const [req] = await receiver.waitFor(1, `/${endpointId}`)
    const [outcome] = expectOk(await polling) as Change[]
    expect(outcome).toMatchObject({
      type: 'delivery.status_changed',
      data: { status: 'delivered', endpoint_id: endpointId, event_id: req!.headers['webhook-id'] },
    })
    // and the message's own change carries that same id
    const received = (await changes(org.key, `cursor=${start}&types=email.received`))[0]!
    expect(received.id).toBe(req!.headers['webhook-id']!)
    // the poll would have waited 30 s: answering within the test's 15 s, it was woken
  }, 15_000)

  test('function deployments: deployed, and a failed one that is not current', async () => {
    const org = await createOrg()
    const start = await cursorOf(org.key)
    const fn = expectOk(
      await h.request('POST', '/v1/functions', {
        key: org.key,
        body: { name: 'feed-fn', code: 'export default { async fetch() { return new Response("ok") } }' },
      }),
      201,
    )
    const broken = expectOk(await h.request('PUT', `/v1/functions/${fn.id}`, { key: org.key, body: { code: 'export default { async fetch( {' } }))
    expect(broken.deployment.status).toBe('failed')
    const got = await changes(org.key, `cursor=${start}&types=function.*`)
    expect(got.map(c => c.type)).toEqual(['function.deployed', 'function.deploy_failed'])
    expect(got[0]).toMatchObject({
      resource: { type: 'deployment', id: fn.current_deployment_id },
      data: { function_id: fn.id, status: 'deployed', is_current: true, deploy_error: null },
    })
    expect(got[1]).toMatchObject({
      resource: { type: 'deployment', id: broken.deployment.id },
      data: { function_id: fn.id, status: 'failed', is_current: false },
    })
    expect(got[1]!.data.deploy_error).toMatchObject({ name: 'SyntaxError' })
  })

  test('a domain verified by the operator (admin verify-domain) is a change', async () => {
    const org = await createOrg()
    const start = await cursorOf(org.key)
    const name = `op${crypto.randomUUID().slice(0, 8)}.example.net`
    const row = await markDomainVerified(await testSql(), h.ctx.keys, h.ctx.config.MANAGED_DOMAIN, org.orgId, name)
    expect(await changes(org.key, `cursor=${start}`)).toMatchObject([
      { type: 'domain.verified', resource: { type: 'domain', id: row.id }, data: { name, status: 'verified', by: 'operator' } },
    ])
  })

  test('a failed domain verification is a change', async () => {
    const org = await createOrg()
    const domain = expectOk(
      await h.request('POST', '/v1/domains', { key: org.key, body: { domain: `d${crypto.randomUUID().slice(0, 8)}.example.net`, confirmed: true } }),
      201,
    )
    const start = await cursorOf(org.key)
    await h.request('POST', `/v1/domains/${domain.id}/verify`, { key: org.key })
    const [change] = await changes(org.key, `cursor=${start}`)
    expect(change).toMatchObject({
      type: 'domain.verification_failed',
      resource: { type: 'domain', id: domain.id },
      data: { name: domain.domain ?? domain.name, status: 'pending' },
    })
  })
})
