/**
 * Functions end to end: real mail through the inbound path, real deliveries as jobs, real QuickJS
 * sandboxes, a real loopback HTTP receiver, and the reply landing in the sender's inbox.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'
import { sandboxPool } from '../../src/functions/sandbox/pool'
import { until } from '../helpers/until'
import { markDomainVerified } from '../../src/domains/service'

const ENV = { WEBHOOK_ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '1', FUNCTION_WALL_CLOCK_MS: '10000', FUNCTION_CPU_MS: '700' }

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

let n = 0
async function routedFunction(org: TestOrg, code: string) {
  const fn = await h.request('POST', '/v1/functions', { key: org.key, body: { name: `fn-${++n}`, code } })
  expect(fn.body.data?.deploy_status).toBe('deployed')
  const routed = await h.request('PUT', `/v1/functions/${fn.body.data.id}/route`, { key: org.key, body: { domain_id: null } })
  expect(routed.status).toBe(200)
  return routed.body.data
}

async function orgWithFunction(code: string, plan: 'developer' | 'power' = 'developer') {
  const org = await createOrg({ plan })
  const address = await managedAddress(h.ctx, org.orgId)
  const fn = await routedFunction(org, code)
  return { org, address, fn }
}

const deliveriesOf = (org: TestOrg) => h.request('GET', '/v1/webhooks/deliveries', { key: org.key }).then(r => r.body.data as any[])
const invocationsOf = (org: TestOrg, fnId: string) => h.request('GET', `/v1/functions/${fnId}/invocations`, { key: org.key }).then(r => r.body.data as any[])

/** Mail to `address`; resolves with the function's finished delivery. */
async function mailAndWait(org: TestOrg, address: string, subject = 'hello') {
  await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject, text: 'body' })
  // two attempts of a run that takes the whole wall clock, with the retry delay between them
  const ds = await until(
    () => deliveriesOf(org),
    ds => ds.some(d => d.email.subject === subject && d.status !== 'pending'),
    45_000,
  )
  return ds.find(d => d.email.subject === subject)
}

const REPLYING_FUNCTION = (receiverUrl: string) => `
const hex = buf => [...new Uint8Array(buf)].map(b => b.toString(16).padStart(2, '0')).join('')
export default {
  async fetch(request, env) {
    const body = await request.text()
    const header = request.headers.get('service-signature')
    const t = header.split(',')[0].slice(2)
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(env.SERVICE_WEBHOOK_SECRET), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    const expected = hex(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(t + '.' + body)))
    if (!header.split(',').slice(1).some(v => v === 'v1=' + expected)) return new Response('bad signature', { status: 401 })
    const event = JSON.parse(body)
    console.log('event', event.id, 'for', event.email.headers.subject)
    const seen = await fetch(${JSON.stringify(receiverUrl)}, { method: 'POST', body: JSON.stringify({ id: event.id, greeting: env.GREETING }) })
    const reply = await fetch(env.SERVICE_API_BASE_URL + '/send-mail', {
      method: 'POST',
      headers: { authorization: 'Bearer ' + env.SERVICE_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ from: event.email.envelope.rcpt_to[0], in_reply_to_email_id: event.email.id, subject: 'Re: ' + event.email.headers.subject, body_text: env.GREETING + ' (receiver said ' + (await seen.text()) + ')' }),
    })
    const sent = await reply.json()
    console.log('reply', reply.status, sent.data && sent.data.id)
    return Response.json({ ok: reply.ok })
  },
}`

describe('a function on the inbound path', () => {
  test('verifies the signature, reads secrets (function over org), fetches a loopback receiver and replies through the API', async () => {
    const sender = await createOrg()
    const senderAddress = await managedAddress(h.ctx, sender.orgId)
    const { org, address, fn } = await orgWithFunction(REPLYING_FUNCTION(receiver.url('/fn-seen')))
    await h.request('POST', '/v1/org/secrets', { key: org.key, body: { key: 'GREETING', value: 'org says hi' } })
    await h.request('POST', `/v1/functions/${fn.id}/secrets`, { key: org.key, body: { key: 'GREETING', value: 'function says hi' } })
    const sent = await h.request('POST', '/v1/send-mail', {
      key: sender.key,
      body: { from: senderAddress, to: address, subject: 'Question', body_text: 'Can you help?' },
    })
    expect(sent.status).toBe(200)

    const [seen] = await receiver.waitFor(1, '/fn-seen')
    expect(seen!.json.greeting).toBe('function says hi')
    const [delivery] = await until(
      () => deliveriesOf(org),
      ds => ds[0]?.status === 'delivered',
    )
    expect(delivery).toMatchObject({ status: 'delivered', endpoint_url: `function://${fn.id}`, attempt_count: 1, response_status: 200, last_error_code: null })

    const inbox = await until(
      () => h.request('GET', '/v1/emails', { key: sender.key }).then(r => r.body.data as any[]),
      es => es.some(e => e.subject === 'Re: Question'),
    )
    const reply = inbox.find(e => e.subject === 'Re: Question')
    expect(reply).toBeDefined()
    const full = await h.request('GET', `/v1/emails/${reply.id}`, { key: sender.key })
    expect(full.body.data.text).toContain('function says hi (receiver said ok)')

    const activity = await h.request('GET', `/v1/functions/${fn.id}/activity`, { key: org.key })
    expect(activity.body.data).toHaveLength(1)
    expect(activity.body.data[0]).toMatchObject({ type: 'email.replied', delivery_id: delivery.id })
    const sentByFunction = await h.request('GET', `/v1/sent-emails/${activity.body.data[0].email_id}`, { key: org.key })
    expect(sentByFunction.status).toBe(200)
    expect((await h.request('GET', `/v1/functions/${fn.id}/activity?type=email.sent`, { key: org.key })).body.data).toHaveLength(0)

    const [inv] = await invocationsOf(org, fn.id)
    expect(inv).toMatchObject({ outcome: 'ok', response_status: 200, delivery_id: delivery.id, request_method: 'POST', subrequests: 2 })
    const one = await h.request('GET', `/v1/functions/${fn.id}/invocations/${inv.id}`, { key: org.key })
    expect(one.body.data.logs.map((l: any) => l.message)).toEqual([
      expect.stringMatching(/^event evt_\w+ for Question$/),
      expect.stringMatching(/^reply 200 [0-9a-f-]{36}$/),
    ])
    const logs = await h.request('GET', `/v1/functions/${fn.id}/logs?limit=1`, { key: org.key })
    expect(logs.body.data.logs).toHaveLength(1)
    expect(logs.body.data.next_cursor).toBe(logs.body.meta.cursor)
    const older = await h.request('GET', `/v1/functions/${fn.id}/logs?limit=1&cursor=${encodeURIComponent(logs.body.meta.cursor)}`, { key: org.key })
    expect(older.body.data.logs[0].message).toStartWith('event ')
    const usage = await h.request('GET', `/v1/functions/${fn.id}/usage`, { key: org.key })
    expect(usage.body.data).toMatchObject({ invocations: 1, by_outcome: { ok: 1 }, log_lines: 2 })
    const series = await h.request(
      'GET',
      `/v1/functions/invocation-series?function_id=${fn.id}&bucket=hour&since=${encodeURIComponent(new Date(Date.now() - 3600_000).toISOString())}`,
      { key: org.key },
    )
    expect(series.body.data.points.reduce((s: number, p: any) => s + p.invocations, 0)).toBe(1)
  })

  test('the runtime key has no creator: owner-only writes are 403, and it stops working when the function is deleted', async () => {
    const code = `export default { async fetch(request, env) {
      const who = await fetch(env.SERVICE_API_BASE_URL + '/whoami', { headers: { authorization: 'Bearer ' + env.SERVICE_API_KEY } })
      console.log(env.SERVICE_API_KEY)
      return new Response(await who.text(), { status: who.status }) } }`
    // power: x402 is included, so the 403 is about the key, not the plan
    const { org, address, fn } = await orgWithFunction(code, 'power')
    const d = await mailAndWait(org, address, 'who')
    expect(d.status).toBe('delivered')
    const [inv] = await invocationsOf(org, fn.id)
    const runtimeKey = (await h.request('GET', `/v1/functions/${fn.id}/invocations/${inv.id}`, { key: org.key })).body.data.logs[0].message
    const whoami = await h.request('GET', '/v1/whoami', { key: runtimeKey })
    expect(whoami.body.data).toMatchObject({ org_id: org.orgId, user_id: null })
    const payout = { network: 'base-sepolia', address: `0x${'ab'.repeat(20)}`, message: 'statement', signature: `0x${'cd'.repeat(65)}` }
    expectError(await h.request('POST', '/v1/x402/payout-addresses', { key: runtimeKey, body: payout }), 403, 'forbidden')
    await h.request('DELETE', `/v1/functions/${fn.id}`, { key: org.key })
    expectError(await h.request('GET', '/v1/whoami', { key: runtimeKey }), 401, 'unauthorized')
    // deleted: its deliveries stay readable, its endpoint is gone, replay is refused
    expect((await deliveriesOf(org)).map(x => x.id)).toContain(d.id)
    expect((await h.request('GET', '/v1/endpoints', { key: org.key })).body.data).toEqual([])
    expectError(await h.request('POST', `/v1/webhooks/deliveries/${d.id}/replay`, { key: org.key }), 409, 'conflict')
  })

  test('a non-2xx answer fails the attempt, which is retried with the same event; replay works', async () => {
    const code = `export default { async fetch(request) {
        const event = await request.json()
        if (event.delivery.attempt === 1) return new Response('not yet', { status: 503 })
        return new Response('ok', { headers: { 'service-delivery-confirmed': event.id } }) } }`
    const { org, address, fn } = await orgWithFunction(code)
    const d = await mailAndWait(org, address, 'retry me')
    expect(d).toMatchObject({ status: 'header_confirmed', attempt_count: 2, last_error: null })
    const outcomes = (await invocationsOf(org, fn.id)).map(i => [i.outcome, i.response_status])
    expect(outcomes).toEqual([
      ['ok', 200],
      ['ok', 503],
    ])
    const replay = await h.request('POST', `/v1/webhooks/deliveries/${d.id}/replay`, { key: org.key })
    expect(replay.body.data).toEqual({ delivered: 1, failed: 0 })
    expect(await invocationsOf(org, fn.id)).toHaveLength(3)
  })

  test('an exception fails the attempt with function_exception and its message', async () => {
    const { org, address, fn } = await orgWithFunction(`export default { async fetch() { throw new TypeError('flaky') } }`)
    const d = await mailAndWait(org, address, 'throws')
    expect(d).toMatchObject({ status: 'failed', last_error_code: 'function_exception', attempt_count: 2 })
    expect(d.last_error).toContain('TypeError: flaky')
    const [inv] = await invocationsOf(org, fn.id)
    const full = await h.request('GET', `/v1/functions/${fn.id}/invocations/${inv.id}`, { key: org.key })
    expect(full.body.data).toMatchObject({ outcome: 'exception', exception_name: 'TypeError', exception_message: 'flaky' })
    expect(full.body.data.exception_stack).toContain('function.js:1')
  })

  test('a deployment that fails to redeploy leaves the current one receiving mail; a secret change applies without a redeploy', async () => {
    const { org, address, fn } = await orgWithFunction(`export default { async fetch(r, env) { console.log(env.MODE); return new Response('v1') } }`)
    await h.request('PUT', `/v1/functions/${fn.id}`, { key: org.key, body: { code: 'export default {' } })
    await h.request('POST', `/v1/functions/${fn.id}/secrets`, { key: org.key, body: { key: 'MODE', value: 'changed' } })
    expect((await mailAndWait(org, address, 'still v1')).status).toBe('delivered')
    const [inv] = await invocationsOf(org, fn.id)
    expect(inv.deployment_id).toBe(fn.current_deployment_id)
    const full = await h.request('GET', `/v1/functions/${fn.id}/invocations/${inv.id}`, { key: org.key })
    expect(full.body.data.logs[0].message).toBe('changed')
  })
})

describe('routing and records', () => {
  test('a function routed to a domain gets its mail; the fallback function the rest; a held slot is 409', async () => {
    const org = await createOrg()
    const managed = await managedAddress(h.ctx, org.orgId)
    const name = `fn-route-${crypto.randomUUID().slice(0, 8)}.example`
    const other = `fn-other-${crypto.randomUUID().slice(0, 8)}.example`
    const domain = await markDomainVerified(h.ctx.sql, h.ctx.keys, h.ctx.config.MANAGED_DOMAIN, org.orgId, name)
    await markDomainVerified(h.ctx.sql, h.ctx.keys, h.ctx.config.MANAGED_DOMAIN, org.orgId, other)
    const logging = (label: string) =>
      `export default { async fetch(request) { const e = await request.json(); console.log('${label}: ' + e.email.headers.subject); return new Response('') } }`
    const deploy = async (label: string) =>
      (await h.request('POST', '/v1/functions', { key: org.key, body: { name: `route-${label}-${++n}`, code: logging(label) } })).body.data
    const [forDomain, fallback, third] = [await deploy('domain'), await deploy('fallback'), await deploy('third')]
    const routed = await h.request('PUT', `/v1/functions/${forDomain.id}/route`, { key: org.key, body: { domain_id: domain.id } })
    expect(routed.body.data.route).toEqual({ domain_id: domain.id, enabled: true, is_route_target: false })
    expect((await h.request('PUT', `/v1/functions/${fallback.id}/route`, { key: org.key, body: { domain_id: null } })).status).toBe(200)
    expectError(await h.request('PUT', `/v1/functions/${third.id}/route`, { key: org.key, body: { domain_id: domain.id } }), 409, 'conflict')

    for (const [to, subject] of [
      [`anyone@${name}`, 'to the domain'],
      [`anyone@${other}`, 'other domain, no endpoint of its own'],
      [managed, 'managed inbox'],
    ]) {
      await h.transport.sendMail({ from: 'sam@sender.example', to, subject, text: 'x' })
    }
    await until(
      () => deliveriesOf(org),
      ds => ds.length === 3 && ds.every(d => d.status === 'delivered'),
    )
    const logsOf = async (id: string) =>
      ((await h.request('GET', `/v1/functions/${id}/logs`, { key: org.key })).body.data.logs as any[]).map(l => l.message).sort()
    expect(await logsOf(forDomain.id)).toEqual(['domain: to the domain'])
    expect(await logsOf(fallback.id)).toEqual(['fallback: managed inbox', 'fallback: other domain, no endpoint of its own'])
    expect(await logsOf(third.id)).toEqual([])
    const topo = (await h.request('GET', '/v1/functions/routing-topology', { key: org.key })).body.data.functions as any[]
    expect(topo.find(f => f.function_id === forDomain.id)).toMatchObject({ slot: 'domain', domain_id: domain.id, domain: name, enabled: true })
    expect(topo.find(f => f.function_id === third.id)).toMatchObject({ slot: 'none', endpoint_id: null })
  })

  test('activity (email.sent and email.replied) and invocations, with their filters and pages', async () => {
    const target = await createOrg()
    const targetAddress = await managedAddress(h.ctx, target.orgId)
    const code = `export default { async fetch(request, env) {
      const event = await request.json()
      const send = body => fetch(env.SERVICE_API_BASE_URL + '/send-mail', { method: 'POST', headers: { authorization: 'Bearer ' + env.SERVICE_API_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ from: event.email.envelope.rcpt_to[0], ...body }) })
      const a = await send({ to: ${JSON.stringify(targetAddress)}, subject: 'fyi ' + event.email.headers.subject, body_text: 'forwarded' })
      const b = await send({ in_reply_to_email_id: event.email.id, subject: 'Re: ' + event.email.headers.subject, body_text: 'thanks' })
      return new Response('', { status: a.ok && b.ok ? 200 : 500 }) } }`
    const { org, address, fn } = await orgWithFunction(code)
    const first = await mailAndWait(org, address, 'one')
    const started = new Date()
    const second = await mailAndWait(org, address, 'two')
    expect([first.status, second.status]).toEqual(['delivered', 'delivered'])

    const activity = async (query = '') => (await h.request('GET', `/v1/functions/${fn.id}/activity${query}`, { key: org.key })).body
    const all = await activity()
    expect(all.meta.total).toBe(4)
    expect((all.data as any[]).map(a => a.type).sort()).toEqual(['email.replied', 'email.replied', 'email.sent', 'email.sent'])
    const sent = (await activity('?type=email.sent')).data as any[]
    expect(sent.map(a => a.delivery_id).sort()).toEqual([first.id, second.id].sort())
    const sentEmail = await h.request('GET', `/v1/sent-emails/${sent[0].email_id}`, { key: org.key })
    expect(sentEmail.body.data.subject).toStartWith('fyi ')
    expect(((await activity('?type=email.replied')).data as any[]).every(a => a.type === 'email.replied')).toBe(true)
    const ofFirst = (await activity(`?delivery_id=${first.id}`)).data as any[]
    expect(ofFirst.map(a => a.type).sort()).toEqual(['email.replied', 'email.sent'])
    expect(ofFirst.every(a => a.delivery_id === first.id)).toBe(true)
    expect(((await activity(`?email_id=${sent[0].email_id}`)).data as any[]).map(a => a.email_id)).toEqual([sent[0].email_id])
    expect((await activity(`?type=email.sent&delivery_id=${second.id}`)).meta.total).toBe(1)
    expectError(await h.request('GET', `/v1/functions/${fn.id}/activity?type=email.received`, { key: org.key }), 400, 'validation_error', /^type: /)
    expectError(await h.request('GET', `/v1/functions/${fn.id}/activity?email_id=nope`, { key: org.key }), 400, 'validation_error', /^email_id: /)

    // invocations: one page at a time, newest first, and since
    const page1 = (await h.request('GET', `/v1/functions/${fn.id}/invocations?limit=1`, { key: org.key })).body
    expect(page1.data.map((i: any) => i.delivery_id)).toEqual([second.id])
    expect(page1.meta).toMatchObject({ total: 2, limit: 1 })
    const page2 = (await h.request('GET', `/v1/functions/${fn.id}/invocations?limit=1&cursor=${encodeURIComponent(page1.meta.cursor)}`, { key: org.key })).body
    expect(page2.data.map((i: any) => i.delivery_id)).toEqual([first.id])
    const recent = (await h.request('GET', `/v1/functions/${fn.id}/invocations?since=${encodeURIComponent(started.toISOString())}`, { key: org.key })).body
    expect(recent.data.map((i: any) => i.delivery_id)).toEqual([second.id])
    expectError(await h.request('GET', `/v1/functions/${fn.id}/invocations?since=yesterday`, { key: org.key }), 400, 'validation_error', /^since: /)
    expectError(await h.request('GET', `/v1/functions/${fn.id}/invocations?outcome=fine`, { key: org.key }), 400, 'validation_error', /^outcome: /)
  }, 60_000)
})

describe('limits end the run with their own outcome and leave the worker healthy', () => {
  const cases: [string, string, string, string][] = [
    [
      'memory bomb with strings',
      `let s = 'x'; while (s.length < (8 << 20)) s = s + s; const a = []; for (let i = 0; ; i++) a.push((s + i).slice(1))`,
      'exceeded_memory',
      'function_exceeded_memory',
    ],
    ['memory bomb with typed arrays', `const a = []; for (;;) a.push(new Uint8Array(16 << 20))`, 'exceeded_memory', 'function_exceeded_memory'],
    ['while (true)', `while (true) {}`, 'exceeded_cpu', 'function_exceeded_cpu'],
    ['a microtask spin', `const spin = () => { Promise.resolve().then(spin) }; spin(); await new Promise(() => {})`, 'exceeded_cpu', 'function_exceeded_cpu'],
    ['a stack overflow', `const f = n => f(n + 1) + 1; f(0)`, 'exceeded_limit', 'function_exceeded_limit'],
    ['a promise that never settles', `await new Promise(() => {})`, 'exception', 'function_exception'],
    ['oversized logs', `for (;;) console.log('x'.repeat(10000))`, 'exceeded_limit', 'function_exceeded_limit'],
    ['too many subrequests', `for (let i = 0; i < 60; i++) await fetch(${JSON.stringify('RECEIVER')})`, 'exceeded_limit', 'function_exceeded_limit'],
    ['the wall clock', `await new Promise(r => setTimeout(r, 60000))`, 'exceeded_wall_clock', 'function_timeout'],
  ]
  for (const [name, body, outcome, code] of cases) {
    test(name, async () => {
      const src = `export default { async fetch(request, env) { ${body.replace('RECEIVER', receiver.url('/many'))}; return new Response('unreachable') } }`
      const { org, address, fn } = await orgWithFunction(src)
      const d = await mailAndWait(org, address, name)
      expect(d).toMatchObject({ status: 'failed', last_error_code: code, attempt_count: 2 })
      const invocations = await invocationsOf(org, fn.id)
      expect(invocations.map(i => i.outcome)).toEqual([outcome, outcome])
      const filtered = await h.request('GET', `/v1/functions/${fn.id}/invocations?outcome=${outcome}`, { key: org.key })
      expect(filtered.body.meta.total).toBe(2)
      // the next run of another function is fine
      const healthy = await orgWithFunction(`export default { fetch() { return new Response('fine') } }`)
      expect((await mailAndWait(healthy.org, healthy.address, `after ${name}`)).status).toBe('delivered')
    }, 60_000)
  }
})

describe('isolation and safety', () => {
  test('a sandbox that ended cleanly serves the next invocation of its deployment; a redeploy starts afresh', async () => {
    const counting = (v: string) => `let n = 0; export default { fetch() { n++; console.log('${v}:' + n); return new Response('') } }`
    const { org, address, fn } = await orgWithFunction(counting('v1'))
    await mailAndWait(org, address, 'warm 1')
    await mailAndWait(org, address, 'warm 2')
    await h.request('PUT', `/v1/functions/${fn.id}`, { key: org.key, body: { code: counting('v2') } })
    await mailAndWait(org, address, 'warm 3')
    const logs = await h.request('GET', `/v1/functions/${fn.id}/logs`, { key: org.key })
    expect(logs.body.data.logs.map((l: any) => l.message).reverse()).toEqual(['v1:1', 'v1:2', 'v2:1'])
  })

  test('code that nests past the engine stack fails the attempt with a stack overflow; a new sandbox serves the retry', async () => {
    // the first nesting this deep in a thread usually aborts the WebAssembly instance itself
    // (guest-abort.unit.test.ts); either way the run is exceeded_limit and its sandbox is discarded
    const code = `let runs = 0
    export default { async fetch(request) {
      runs++
      const event = await request.json()
      console.log('run ' + runs + ' of this sandbox, attempt ' + event.delivery.attempt)
      if (event.email.headers.subject === 'nest' && event.delivery.attempt === 1) JSON.parse('['.repeat(1000000))
      return new Response('ok') } }`
    const { org, address, fn } = await orgWithFunction(code)
    expect((await mailAndWait(org, address, 'warm')).status).toBe('delivered')
    const d = await mailAndWait(org, address, 'nest')
    expect(d).toMatchObject({ status: 'delivered', attempt_count: 2 })
    const [retry, failed] = await invocationsOf(org, fn.id)
    expect(failed).toMatchObject({ outcome: 'exceeded_limit', delivery_id: d.id })
    const failedFull = (await h.request('GET', `/v1/functions/${fn.id}/invocations/${failed.id}`, { key: org.key })).body.data
    expect(failedFull.exception_message).toMatch(/^stack overflow/)
    // the failed attempt ran in the warm sandbox of the first mail; the retry in a new one
    expect(failedFull.logs.map((l: any) => l.message)).toEqual(['run 2 of this sandbox, attempt 1'])
    const retryFull = (await h.request('GET', `/v1/functions/${fn.id}/invocations/${retry.id}`, { key: org.key })).body.data
    expect(retryFull).toMatchObject({ outcome: 'ok', delivery_id: d.id })
    expect(retryFull.logs.map((l: any) => l.message)).toEqual(['run 1 of this sandbox, attempt 2'])
  }, 60_000)

  test('guest fetch goes through the SSRF guard', async () => {
    const code = `export default { async fetch() {
      const out = []
      for (const url of ['http://169.254.169.254/latest/meta-data', 'http://10.0.0.1/', 'http://[::ffff:10.0.0.1]/', 'file:///etc/passwd']) {
        try { await fetch(url); out.push('reached ' + url) } catch (e) { out.push(e.message) }
      }
      console.log(JSON.stringify(out))
      return new Response('done') } }`
    const { org, address, fn } = await orgWithFunction(code)
    expect((await mailAndWait(org, address, 'ssrf')).status).toBe('delivered')
    const [inv] = await invocationsOf(org, fn.id)
    const logs = JSON.parse((await h.request('GET', `/v1/functions/${fn.id}/invocations/${inv.id}`, { key: org.key })).body.data.logs[0].message)
    expect(logs).toHaveLength(4)
    for (const line of logs) expect(line).toMatch(/^fetch failed: .*(refused|must be)/)
  })

  test('a sandbox thread that dies mid-run is retried, and the next attempt succeeds', async () => {
    receiver.respond('/slow', () => new Promise<Response>(resolve => setTimeout(() => resolve(new Response('slow ok')), 300)) as never)
    const code = `export default { async fetch(request) {
      const event = await request.json()
      if (event.delivery.attempt === 1) await fetch(${JSON.stringify(receiver.url('/slow'))})
      return new Response('ok') } }`
    const { org, address, fn } = await orgWithFunction(code)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'crash', text: 'x' })
    await receiver.waitFor(1, '/slow')
    sandboxPool(h.ctx).killThreads('test: the thread was killed')
    const [d] = await until(
      () => deliveriesOf(org),
      ds => ds[0]?.status === 'delivered',
    )
    expect(d).toMatchObject({ status: 'delivered', attempt_count: 2 })
    expect((await invocationsOf(org, fn.id)).map(i => i.outcome)).toEqual(['ok', 'crashed'])
  })
})

describe('test runs and dry runs', () => {
  test('a test email goes through the inbound path and its trace shows every step', async () => {
    const { org, fn } = await orgWithFunction(`export default { async fetch(r) { console.log('tested'); return new Response('ok') } }`)
    const run = await h.request('POST', `/v1/functions/${fn.id}/test`, { key: org.key })
    expect(run.status).toBe(200)
    const trace = await until(
      () => h.request('GET', `/v1/functions/${fn.id}/test-runs/${run.body.data.run_id}/trace`, { key: org.key }),
      r => r.body.data?.complete === true,
    )
    expect(trace.body.data.email_id).toBe(run.body.data.email_id)
    expect(trace.body.data.steps.map((s: any) => s.step)).toEqual(['received', 'stored', 'routed', 'invoked', 'log', 'outcome', 'delivery'])
    expect(trace.body.data.steps.at(-1)).toMatchObject({ status: 'delivered' })
    const other = await createOrg()
    expectError(await h.request('GET', `/v1/functions/${fn.id}/test-runs/${run.body.data.run_id}/trace`, { key: other.key }), 404, 'not_found')
  })

  test('a function with no route cannot be tested and receives no mail', async () => {
    const org = await createOrg()
    await managedAddress(h.ctx, org.orgId)
    const fn = (
      await h.request('POST', '/v1/functions', { key: org.key, body: { name: 'unrouted', code: `export default { fetch() { return new Response('') } }` } })
    ).body.data
    expectError(await h.request('POST', `/v1/functions/${fn.id}/test`, { key: org.key }), 409, 'conflict')
  })

  test('a dry run runs a stored email through a deployment and sends nothing', async () => {
    const { org, address, fn } = await orgWithFunction(REPLYING_FUNCTION(receiver.url('/dry-seen')))
    const d = await mailAndWait(org, address, 'dry')
    const before = (await invocationsOf(org, fn.id)).length
    const activityBefore = (await h.request('GET', `/v1/functions/${fn.id}/activity`, { key: org.key })).body.meta.total
    const deliveriesBefore = (await deliveriesOf(org)).length
    const postsBefore = receiver.requests.filter(r => r.path === '/dry-seen').length
    const res = await h.request('POST', `/v1/functions/${fn.id}/dry-run`, { key: org.key, body: { email_id: d.email_id } })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ outcome: 'ok', response: { status: 200 } })
    // its POST to the receiver was not sent: the guest got a 403 in its place
    expect(res.body.data.captured_sends).toEqual([
      expect.objectContaining({
        in_reply_to_email_id: d.email_id,
        subject: 'Re: dry',
        body_text: expect.stringContaining('dry run: POST requests to other services are not sent'),
      }),
    ])
    expect(receiver.requests.filter(r => r.path === '/dry-seen')).toHaveLength(postsBefore)
    expect((await invocationsOf(org, fn.id)).length).toBe(before)
    expect((await h.request('GET', `/v1/functions/${fn.id}/activity`, { key: org.key })).body.meta.total).toBe(activityBefore)
    expect((await deliveriesOf(org)).length).toBe(deliveriesBefore)
    const other = await createOrg()
    expectError(await h.request('POST', `/v1/functions/${fn.id}/dry-run`, { key: other.key, body: { email_id: d.email_id } }), 404, 'not_found')
  })

  test('routing topology shows functions wired to their slots', async () => {
    const { org, fn } = await orgWithFunction(`export default { fetch() { return new Response('') } }`)
    const topo = await h.request('GET', '/v1/functions/routing-topology', { key: org.key })
    expect(topo.body.data.functions).toEqual([expect.objectContaining({ function_id: fn.id, slot: 'fallback', enabled: true, domain_id: null })])
    const second = (
      await h.request('POST', '/v1/functions', { key: org.key, body: { name: 'second', code: `export default { fetch() { return new Response('') } }` } })
    ).body.data
    expectError(await h.request('PUT', `/v1/functions/${second.id}/route`, { key: org.key, body: { domain_id: null } }), 409, 'conflict')
  })
})
