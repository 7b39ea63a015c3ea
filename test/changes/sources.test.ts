/** The writes that report to the feed: sends, delivery outcomes, domain verification. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'

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
    const sent = expectOk(await h.request('POST', '/v1/send-mail', { key: org.key, body: { from, to: 'alice@example.com', subject: 'feed me', body_text: 'hi' } }))
    const got = await changes(org.key, `cursor=${start}`)
    expect(got.map(c => c.type)).toEqual(['email.sent', 'send.status_changed'])
    expect(got[0]).toMatchObject({ resource: { type: 'email' }, data: { send_id: sent.id, subject: 'feed me', from } })
    expect(got[1]).toMatchObject({ resource: { type: 'send', id: sent.id }, data: { status: 'queued' } })
  })

  test('a delivery outcome wakes a long-poll and names the event id the endpoint received', async () => {
    const org = await createOrg()
    const address = await managedAddress(h.ctx, org.orgId)
    const sql = await testSql()
    const endpointId = crypto.randomUUID()
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${endpointId}, ${org.orgId}, 'http', ${receiver.url(`/${endpointId}`)}, true, '{}')`
    const start = await cursorOf(org.key)
    const polling = h.request('GET', `/v1/changes?cursor=${start}&types=delivery.*&wait=20`, { key: org.key })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'deliver me', text: 'x' })
    const [req] = await receiver.waitFor(1, `/${endpointId}`)
    const [outcome] = expectOk(await polling) as Change[]
    expect(outcome).toMatchObject({ type: 'delivery.status_changed', data: { status: 'delivered', endpoint_id: endpointId, event_id: req!.headers['webhook-id'] } })
    // and the message's own change carries that same id
    const received = (await changes(org.key, `cursor=${start}&types=email.received`))[0]!
    expect(received.id).toBe(req!.headers['webhook-id']!)
  })

  test('a failed domain verification is a change', async () => {
    const org = await createOrg()
    const domain = expectOk(await h.request('POST', '/v1/domains', { key: org.key, body: { domain: `d${crypto.randomUUID().slice(0, 8)}.example.net`, confirmed: true } }), 201)
    const start = await cursorOf(org.key)
    await h.request('POST', `/v1/domains/${domain.id}/verify`, { key: org.key })
    const [change] = await changes(org.key, `cursor=${start}`)
    expect(change).toMatchObject({ type: 'domain.verification_failed', resource: { type: 'domain', id: domain.id }, data: { name: domain.domain ?? domain.name, status: 'pending' } })
  })
})
