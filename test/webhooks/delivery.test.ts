import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import Stripe from 'stripe'
import { Webhook } from 'standardwebhooks'
import { createOrg, testSql, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { claim, heartbeat } from '../../src/jobs/queue'
import { DELIVER_KIND } from '../../src/webhooks/deliver.job'
import { markDomainVerified } from '../../src/domains/service'
import type { EndpointRules } from '../../src/webhooks/endpoint-queries'
import { JOB_KINDS } from '../../src/job-kinds'
import { until } from '../helpers/until'

const stripe = new Stripe('sk_test_unused')
const ENV = { WEBHOOK_ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '1,1', WEBHOOK_TIMEOUT_MS: '10000' }

let h: InboundHarness
let worker: Worker
let receiver: Receiver

beforeAll(async () => {
  h = await inboundHarness(ENV)
  worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  receiver = startReceiver()
})
afterAll(async () => {
  await worker.stop(1000)
  receiver.stop()
  await h.stop()
})

async function endpoint(orgId: string, opts: { url?: string; domainId?: string | null; routeTarget?: boolean; rules?: EndpointRules; enabled?: boolean } = {}) {
  const sql = await testSql()
  const id = randomUUIDv7()
  await sql`
    insert into endpoints (id, org_id, kind, url, enabled, domain_id, is_route_target, rules)
    values (${id}, ${orgId}, 'http', ${opts.url ?? receiver.url(`/${id}`)}, ${opts.enabled ?? true}, ${opts.domainId ?? null},
            ${opts.routeTarget ?? false}, ${sql.json((opts.rules ?? {}) as never)})`
  return { id, path: `/${id}` }
}

async function secretOf(org: TestOrg): Promise<string> {
  return (await h.request('GET', '/v1/account/webhook-secret', { key: org.key })).body.data.secret
}

async function deliveries(org: TestOrg, query = '') {
  const res = await h.request('GET', `/v1/webhooks/deliveries${query}`, { key: org.key })
  expect(res.status).toBe(200)
  return res.body.data as any[]
}

async function orgWithInbox(plan: 'developer' | 'free' = 'developer') {
  const org = await createOrg({ plan })
  return { org, address: await managedAddress(h.ctx, org.orgId) }
}

describe('a delivery', () => {
  test('is POSTed once, signed so that Stripe and Standard Webhooks verifiers accept it, with the documented payload', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    const secret = await secretOf(org)
    await h.transport.sendMail({ from: 'Sam <sam@sender.example>', to: address, subject: 'Webhook me', text: 'body text' })
    const [req] = await receiver.waitFor(1, ep.path)
    const event = (await stripe.webhooks.constructEventAsync(req!.body, req!.headers['service-signature']!, secret, 300)) as unknown as Record<string, any>
    expect(req!.headers['legacy-signature']).toBe(req!.headers['service-signature'])
    expect(new Webhook(secret).verify(req!.body, req!.headers)).toMatchObject({ id: event.id })
    expect(req!.headers['webhook-id']).toBe(event.id)
    expect(event).toMatchObject({
      event: 'email.received',
      delivery: { attempt: 1 },
      email: {
        headers: { from: 'Sam <sam@sender.example>', subject: 'Webhook me', to: address },
        parsed: { body_text: 'body text\n', attachments: [] },
        envelope: { rcpt_to: [address] },
      },
    })
    expect(event.id).toMatch(/^evt_[0-9a-f]{32}$/)
    expect(event.email.authentication).toHaveProperty('spf')
    const raw = await h.app.handle(new Request(event.email.raw_url.replace(h.ctx.config.PUBLIC_URL, 'http://api.test.local')))
    expect(raw.status).toBe(200)
    expect(await raw.text()).toContain('Subject: Webhook me')
    const [d] = await until(
      () => deliveries(org),
      ds => ds[0]?.status === 'delivered',
    )
    expect(d).toMatchObject({
      status: 'delivered',
      attempt_count: 1,
      endpoint_id: ep.id,
      event_id: event.id,
      response_status: 200,
      email: { sender: 'sam@sender.example', recipient: address, subject: 'Webhook me' },
    })
    const one = await h.request('GET', `/v1/webhooks/deliveries/${d.id}`, { key: org.key })
    expect(one.body.data).toEqual(d)
  })

  test('a handler that echoes the event id in Service-Delivery-Confirmed makes it header_confirmed', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    receiver.respond(ep.path, r => new Response('done', { headers: { 'service-delivery-confirmed': r.json.id } }))
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'confirm', text: 'x' })
    const [d] = await until(
      () => deliveries(org),
      ds => ds[0]?.status === 'header_confirmed',
    )
    expect(d.status).toBe('header_confirmed')
  })

  test('is retried with the same event id until it succeeds', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    receiver.respond(ep.path, 500, 502, 200)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'retry', text: 'x' })
    const reqs = await receiver.waitFor(3, ep.path)
    expect(new Set(reqs.map(r => r.json.id)).size).toBe(1)
    expect(reqs.map(r => r.json.delivery.attempt)).toEqual([1, 2, 3])
    const [d] = await until(
      () => deliveries(org),
      ds => ds[0]?.status === 'delivered',
    )
    expect(d).toMatchObject({ status: 'delivered', attempt_count: 3, last_error: null })
  })

  test('any 2xx is delivered; a redirect is not followed and counts as a failed attempt', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    const elsewhere = await endpoint(org.orgId, { routeTarget: true })
    receiver.respond(ep.path, () => new Response(null, { status: 302, headers: { location: receiver.url(elsewhere.path) } }), 299)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'any 2xx', text: 'x' })
    const [d] = await until(
      () => deliveries(org),
      ds => ds[0]?.status === 'delivered',
    )
    expect(d).toMatchObject({ status: 'delivered', attempt_count: 2, last_error: null })
    expect((await receiver.waitFor(2, ep.path)).length).toBe(2)
    expect(receiver.requests.filter(r => r.path === elsewhere.path)).toEqual([])
  })

  test('fails with http_<status> after the last attempt', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    receiver.respond(ep.path, 503)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'doomed', text: 'x' })
    const [d] = await until(
      () => deliveries(org),
      ds => ds[0]?.status === 'failed',
    )
    expect(d).toMatchObject({ status: 'failed', attempt_count: 3, last_error_code: 'http_503', last_error: 'endpoint answered HTTP 503' })
    expect((await receiver.waitFor(3, ep.path)).length).toBe(3)
  })

  test('reaches a receiver that was down and then came up', async () => {
    const { org, address } = await orgWithInbox()
    const later = startReceiver()
    const port = later.port
    later.stop()
    const ep = await endpoint(org.orgId, { url: `http://127.0.0.1:${port}/late` })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'late', text: 'x' })
    // ten attempts a second apart instead of three: time to bring the receiver up on a loaded machine
    await (await testSql())`
      update jobs set max_attempts = 10
       where kind = ${DELIVER_KIND} and payload->>'delivery_id' in (select id::text from webhook_deliveries where endpoint_id = ${ep.id})`
    const [pending] = await until(
      () => deliveries(org),
      ds => ds[0]?.attempt_count >= 1 && ds[0]?.last_error_code === 'connection_failed',
    )
    expect(pending).toMatchObject({ status: 'pending', last_error_code: 'connection_failed' })
    const up = startReceiver(port)
    try {
      await up.waitFor(1, '/late')
      const [d] = await until(
        () => deliveries(org),
        ds => ds[0]?.status === 'delivered',
      )
      expect(d.status).toBe('delivered')
      expect(ep.id).toBe(d.endpoint_id)
    } finally {
      up.stop()
    }
  })

  test('a replay sends the stored payload with the original event id; a deleted endpoint refuses it', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'replay me', text: 'x' })
    const [first] = await receiver.waitFor(1, ep.path)
    const [d] = await until(
      () => deliveries(org),
      ds => ds[0]?.status === 'delivered',
    )
    const replay = await h.request('POST', `/v1/webhooks/deliveries/${d.id}/replay`, { key: org.key })
    expect(replay.body).toEqual({ success: true, data: { delivered: 1, failed: 0 } })
    const reqs = await receiver.waitFor(2, ep.path)
    expect(reqs[1]!.json.id).toBe(first!.json.id)
    expect(reqs[1]!.json.email).toMatchObject({ id: first!.json.email.id, headers: first!.json.email.headers })
    expect(reqs[1]!.json.delivery.attempt).toBe(2)
    const sql = await testSql()
    await sql`update endpoints set enabled = false where id = ${ep.id}`
    expect((await h.request('POST', `/v1/webhooks/deliveries/${d.id}/replay`, { key: org.key })).body.data).toEqual({ delivered: 1, failed: 0 })
    await sql`update endpoints set deactivated_at = now() where id = ${ep.id}`
    expectError(await h.request('POST', `/v1/webhooks/deliveries/${d.id}/replay`, { key: org.key }), 409, 'conflict')
    const other = await createOrg()
    expectError(await h.request('POST', `/v1/webhooks/deliveries/${d.id}/replay`, { key: other.key }), 404, 'not_found')
    expectError(await h.request('GET', `/v1/webhooks/deliveries/${d.id}`, { key: other.key }), 404, 'not_found')
  })

  test('after a secret rotation it is signed with both secrets, each verifying on its own', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    const before = await secretOf(org)
    const after = (await h.request('POST', '/v1/account/webhook-secret/rotate', { key: org.key })).body.data.secret
    expect(after).not.toBe(before)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'rotated', text: 'x' })
    const [req] = await receiver.waitFor(1, ep.path)
    const header = req!.headers['service-signature']!
    expect(header.match(/v1=/g)).toHaveLength(2)
    for (const secret of [before, after]) {
      expect(await stripe.webhooks.constructEventAsync(req!.body, header, secret, 300)).toBeTruthy()
      expect(new Webhook(secret).verify(req!.body, req!.headers)).toBeTruthy()
    }
    await expect(stripe.webhooks.constructEventAsync(req!.body, header, 'whsec_wrong', 300)).rejects.toThrow()
  })
})

describe('deliveries claimed together', () => {
  test("two organizations' deliveries started in one batch are each signed with their own organization's secret", async () => {
    const a = await orgWithInbox()
    const b = await orgWithInbox()
    const [epA, epB] = [await endpoint(a.org.orgId), await endpoint(b.org.orgId)]
    const [secretA, secretB] = [await secretOf(a.org), await secretOf(b.org)]
    // No worker while the two jobs are queued, so the next one claims them in one batch.
    await worker.stop(1000)
    try {
      await h.transport.sendMail({ from: 'sam@sender.example', to: a.address, subject: 'for a', text: 'a' })
      await h.transport.sendMail({ from: 'sam@sender.example', to: b.address, subject: 'for b', text: 'b' })
    } finally {
      worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
    }
    const [reqA] = await receiver.waitFor(1, epA.path)
    const [reqB] = await receiver.waitFor(1, epB.path)
    const verify = (req: typeof reqA, secret: string) => stripe.webhooks.constructEventAsync(req!.body, req!.headers['service-signature']!, secret, 300)
    expect(await verify(reqA, secretA)).toMatchObject({ email: { headers: { subject: 'for a' } } })
    expect(await verify(reqB, secretB)).toMatchObject({ email: { headers: { subject: 'for b' } } })
    await expect(verify(reqA, secretB)).rejects.toThrow()
    await expect(verify(reqB, secretA)).rejects.toThrow()
    expect(() => new Webhook(secretB).verify(reqA!.body, reqA!.headers)).toThrow()
  })
})

describe('routing order', () => {
  test('explicit route, then the domain default, then the fallback only for domains without their own', async () => {
    const { org, address: managed } = await orgWithInbox()
    const sql = await testSql()
    const name = `routing-${crypto.randomUUID().slice(0, 8)}.example`
    const other = `other-${crypto.randomUUID().slice(0, 8)}.example`
    const domain = await markDomainVerified(sql, h.ctx.keys, h.ctx.config.MANAGED_DOMAIN, org.orgId, name)
    await markDomainVerified(sql, h.ctx.keys, h.ctx.config.MANAGED_DOMAIN, org.orgId, other)
    const fallback = await endpoint(org.orgId)
    const domainDefault = await endpoint(org.orgId, { domainId: domain.id })
    const routed = await endpoint(org.orgId, { routeTarget: true })
    await sql`insert into recipient_routes (id, org_id, pattern, endpoint_id) values (${randomUUIDv7()}, ${org.orgId}, ${`vip@${name}`}, ${routed.id})`
    const send = (to: string, subject: string) => h.transport.sendMail({ from: 'sam@sender.example', to, subject, text: 'x' })
    await send(`vip@${name}`, 'to the route')
    await send(`anyone@${name}`, 'to the domain default')
    await send(`anyone@${other}`, 'to the fallback (other domain has no endpoint)')
    await send(managed, 'managed inbox to the fallback')
    await until(
      () => deliveries(org),
      ds => ds.length === 4 && ds.every(d => d.status === 'delivered'),
    )
    const subjects = (path: string) =>
      receiver.requests
        .filter(r => r.path === path)
        .map(r => r.json.email.headers.subject)
        .sort()
    expect(subjects(routed.path)).toEqual(['to the route'])
    expect(subjects(domainDefault.path)).toEqual(['to the domain default'])
    expect(subjects(fallback.path)).toEqual(['managed inbox to the fallback', 'to the fallback (other domain has no endpoint)'])
  })

  test('one delivery per endpoint however many recipients lead to it; no endpoint, no delivery', async () => {
    const { org, address } = await orgWithInbox()
    const second = await managedAddress(h.ctx, org.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: [address, second], subject: 'nobody listens', text: 'x' })
    expect(await deliveries(org)).toEqual([])
    const ep = await endpoint(org.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: [address, second], subject: 'two recipients', text: 'x' })
    await receiver.waitFor(1, ep.path)
    await worker.drain()
    expect((await deliveries(org)).length).toBe(1)
  })
})

describe('rules and filters record skipped_by_rules', () => {
  const cases: [string, EndpointRules, string][] = [
    ['max_size_bytes', { max_size_bytes: 100 }, 'rules.max_size_bytes'],
    ['exclude_attachments', { exclude_attachments: true }, 'rules.exclude_attachments'],
    ['attachment_limit_mb', { attachment_limit_mb: 0.000001 }, 'rules.attachment_limit_mb'],
    ['sender_whitelist', { sender_whitelist: ['boss@sender.example'] }, 'rules.sender_whitelist'],
    ['sender_blacklist', { sender_blacklist: ['sam@sender.example'] }, 'rules.sender_blacklist'],
    ['event_types', { event_types: ['email.bounced'] }, 'rules.event_types'],
  ]
  for (const [name, rules, reason] of cases) {
    test(name, async () => {
      const { org, address } = await orgWithInbox()
      const ep = await endpoint(org.orgId, { rules })
      await h.transport.sendMail({
        from: 'sam@sender.example',
        to: address,
        subject: name,
        text: 'x',
        attachments: [{ filename: 'a.txt', content: 'attached' }],
      })
      const [d] = await deliveries(org)
      expect(d).toMatchObject({ status: 'skipped_by_rules', attempt_count: 0 })
      expect(d.last_error).toStartWith(reason)
      expect(receiver.requests.some(r => r.path === ep.path)).toBe(false)
    })
  }

  test('rules that match let the delivery through', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId, { rules: { max_size_bytes: 1_000_000, sender_whitelist: ['sam@sender.example'], event_types: ['email.received'] } })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'fine', text: 'x' })
    await receiver.waitFor(1, ep.path)
  })

  test('a blocklist filter and an unmatched whitelist filter skip; a matched whitelist passes', async () => {
    const { org, address } = await orgWithInbox()
    const ep = await endpoint(org.orgId)
    const sql = await testSql()
    await sql`insert into filters (id, org_id, type, pattern) values (${randomUUIDv7()}, ${org.orgId}, 'blocklist', '*@spam.example')`
    await sql`insert into filters (id, org_id, type, pattern) values (${randomUUIDv7()}, ${org.orgId}, 'whitelist', '@sender.example')`
    await h.transport.sendMail({ from: 'x@spam.example', to: address, subject: 'spam', text: 'x' })
    await h.transport.sendMail({ from: 'x@random.example', to: address, subject: 'unknown', text: 'x' })
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'known', text: 'x' })
    const [known] = await receiver.waitFor(1, ep.path)
    expect(known!.json.email.headers.subject).toBe('known')
    const ds = await until(
      () => deliveries(org),
      list => list.length === 3 && list[0].status === 'delivered',
    )
    expect(ds.map(d => [d.email.subject, d.status])).toEqual([
      ['known', 'delivered'],
      ['unknown', 'skipped_by_rules'],
      ['spam', 'skipped_by_rules'],
    ])
    expect(ds[2].last_error).toContain('blocklist')
    expect(ds[1].last_error).toContain('whitelist')
  })
})

describe('delivery list filters', () => {
  test('status, email_id, date range and pagination', async () => {
    const { org, address } = await orgWithInbox()
    await endpoint(org.orgId, { rules: { event_types: ['nothing'] } })
    const start = new Date(Date.now() - 1000).toISOString()
    for (const s of ['a', 'b', 'c']) await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: s, text: 'x' })
    const all = await deliveries(org)
    expect(all.map(d => d.email.subject)).toEqual(['c', 'b', 'a'])
    expect((await deliveries(org, '?status=skipped_by_rules')).length).toBe(3)
    expect((await deliveries(org, '?status=delivered')).length).toBe(0)
    expect((await deliveries(org, `?email_id=${all[1].email_id}`)).map(d => d.email.subject)).toEqual(['b'])
    expect((await deliveries(org, `?date_from=${encodeURIComponent(start)}`)).length).toBe(3)
    expect((await deliveries(org, `?date_to=${encodeURIComponent(start)}`)).length).toBe(0)
    // a row's own created_at as both bounds finds it: compared at the milliseconds shown, not the microseconds kept
    await (await testSql())`update webhook_deliveries set created_at = date_trunc('milliseconds', created_at) + interval '0.6 milliseconds' where id = ${all[1].id}`
    const shown = encodeURIComponent(all[1].created_at)
    expect((await deliveries(org, `?date_from=${shown}&date_to=${shown}`)).map(d => d.email.subject)).toEqual(['b'])
    const page = await h.request('GET', '/v1/webhooks/deliveries?limit=2', { key: org.key })
    expect(page.body.meta).toMatchObject({ total: 3, limit: 2 })
    const next = await h.request('GET', `/v1/webhooks/deliveries?limit=2&cursor=${page.body.meta.cursor}`, { key: org.key })
    expect(next.body.data.map((d: any) => d.email.subject)).toEqual(['a'])
    expectError(await h.request('GET', '/v1/webhooks/deliveries?limit=101', { key: org.key }), 400, 'validation_error', /^limit: /)
    expectError(await h.request('GET', '/v1/webhooks/deliveries?status=lost', { key: org.key }), 400, 'validation_error', /^status: /)
    expectError(await h.request('GET', '/v1/webhooks/deliveries?date_from=2026-01-01', { key: org.key }), 400, 'validation_error', /^date_from: /)
  })
})

describe('crash safety and discarded content', () => {
  test('a worker that dies mid-delivery: the delivery still happens, once, after its lease runs out', async () => {
    const idle = await inboundHarness(ENV)
    try {
      const org = await createOrg()
      const address = await managedAddress(idle.ctx, org.orgId)
      const ep = await endpoint(org.orgId)
      await worker.stop(1000)
      await idle.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'crash', text: 'x' })
      const sql = await testSql()
      const claimed = await claim(sql, 'worker_that_crashed', [DELIVER_KIND], 1000)
      expect(claimed.length).toBeGreaterThanOrEqual(1)
      worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
      await Bun.sleep(300)
      expect(receiver.requests.filter(r => r.path === ep.path)).toHaveLength(0)
      // its lease runs out; the next heartbeat of any worker frees the job
      await sql`update jobs set locked_at = now() - interval '1 hour' where locked_by = 'worker_that_crashed'`
      expect((await heartbeat(sql, 'janitor', 60)).freed).toBeGreaterThanOrEqual(1)
      worker.wake()
      await receiver.waitFor(1, ep.path)
      await worker.drain()
      expect(receiver.requests.filter(r => r.path === ep.path)).toHaveLength(1)
    } finally {
      await idle.stop()
    }
  })

  test('content discarded before delivery fails it with content_discarded', async () => {
    await worker.stop(1000)
    const sql = await testSql()
    try {
      const { org, address } = await orgWithInbox()
      const ep = await endpoint(org.orgId)
      await sql`update orgs set content_discard_enabled = true where id = ${org.orgId}`
      await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'gone', text: 'x' })
      const email = (await h.request('GET', '/v1/emails', { key: org.key })).body.data[0]
      expect((await h.request('POST', `/v1/emails/${email.id}/discard`, { key: org.key })).status).toBe(200)
      worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
      const [d] = await until(
        () => deliveries(org),
        ds => ds[0]?.status === 'failed',
      )
      expect(d).toMatchObject({ status: 'failed', last_error_code: 'content_discarded' })
      expect(receiver.requests.some(r => r.path === ep.path)).toBe(false)
    } catch (error) {
      worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
      throw error
    }
  })

  test('a loopback URL is refused at send time with the production default', async () => {
    // Jobs are shared through the database: only the strict worker may pick this one up.
    await worker.stop(1000)
    const strict = await inboundHarness({ WEBHOOK_RETRY_SCHEDULE: '1', WEBHOOK_TIMEOUT_MS: '10000' })
    const strictWorker = await startWorker(strict.ctx, { kinds: JOB_KINDS, pollMs: 50 })
    try {
      const org = await createOrg()
      const address = await managedAddress(strict.ctx, org.orgId)
      const ep = await endpoint(org.orgId)
      await strict.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'ssrf', text: 'x' })
      const list = () => strict.request('GET', '/v1/webhooks/deliveries', { key: org.key }).then(r => r.body.data as any[])
      const [d] = await until(list, ds => ds[0]?.status === 'failed')
      expect(d).toMatchObject({ status: 'failed', last_error_code: 'queue_dead_letter' })
      expect(d.last_error).toContain('publicly reachable')
      expect(receiver.requests.some(r => r.path === ep.path)).toBe(false)
    } finally {
      await strictWorker.stop(1000)
      await strict.stop()
      worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
    }
  })
})

describe('POST /v1/endpoints/{id}/test', () => {
  test('sends a signed synthetic email.received and reports the answer', async () => {
    const org = await createOrg()
    const ep = await endpoint(org.orgId)
    receiver.respond(ep.path, () => new Response('x'.repeat(5000), { status: 202 }))
    const res = await h.request('POST', `/v1/endpoints/${ep.id}/test`, { key: org.key })
    expect(res.status).toBe(200)
    const [req] = await receiver.waitFor(1, ep.path)
    expect(res.body.data).toMatchObject({ status: 202, signature: req!.headers['service-signature'], event_id: req!.json.id })
    expect(res.body.data.body).toHaveLength(1024)
    expect(req!.json).toMatchObject({ event: 'email.received', test: true })
    expect(await stripe.webhooks.constructEventAsync(req!.body, req!.headers['service-signature']!, await secretOf(org), 300)).toBeTruthy()
  })

  test('failed tests are limited to 4 per minute; successful ones do not count', async () => {
    const org = await createOrg()
    const good = await endpoint(org.orgId, { routeTarget: true })
    const bad = await endpoint(org.orgId, { routeTarget: true })
    receiver.respond(bad.path, 500)
    for (let i = 0; i < 6; i++) expect((await h.request('POST', `/v1/endpoints/${good.id}/test`, { key: org.key })).body.data.status).toBe(200)
    for (let i = 0; i < 4; i++) expect((await h.request('POST', `/v1/endpoints/${bad.id}/test`, { key: org.key })).body.data.status).toBe(500)
    const limited = await h.request('POST', `/v1/endpoints/${bad.id}/test`, { key: org.key })
    expectError(limited, 429, 'rate_limited')
    expect(limited.headers.get('retry-after')).toBeTruthy()
  })

  test("another organization's endpoint is 404", async () => {
    const org = await createOrg()
    const other = await createOrg()
    const ep = await endpoint(org.orgId)
    expectError(await h.request('POST', `/v1/endpoints/${ep.id}/test`, { key: other.key }), 404, 'not_found')
  })
})
