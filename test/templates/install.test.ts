/**
 * Catalog installs that create working setups: the auto-responder (a function in a real QuickJS
 * sandbox, its recipient route, its template and its settings in its own memory) answering real
 * mail, the forward-to-webhook setup delivering to a loopback receiver, and installs that fail
 * at a later step leaving nothing half-created.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { until } from '../helpers/until'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { JOB_KINDS } from '../../src/job-kinds'

let h: InboundHarness
let worker: Worker
let receiver: Receiver

beforeAll(async () => {
  h = await inboundHarness({ WEBHOOK_ALLOW_LOOPBACK: 'true', WEBHOOK_RETRY_SCHEDULE: '1', FUNCTION_WALL_CLOCK_MS: '10000', FUNCTION_CPU_MS: '700' })
  worker = await startWorker(h.ctx, { kinds: JOB_KINDS, pollMs: 50 })
  receiver = startReceiver()
})
afterAll(async () => {
  await worker.stop(1000)
  receiver.stop()
  await h.stop()
})

const install = (o: TestOrg, slug: string, variables: Record<string, string>, headers: Record<string, string> = {}) =>
  h.request('POST', '/v1/templates/install', { key: o.key, body: { slug, variables }, headers })

/** Everything an install could have made in the organization, and its feed since `cursor`. */
async function inventory(o: TestOrg, cursor: string) {
  const sql = await testSql()
  const [row] = await sql<{ templates: number; functions: number; endpoints: number; routes: number; memories: number; keys: number }[]>`
    select (select count(*)::int from email_templates where org_id = ${o.orgId}) as templates,
           (select count(*)::int from functions where org_id = ${o.orgId}) as functions,
           (select count(*)::int from endpoints where org_id = ${o.orgId}) as endpoints,
           (select count(*)::int from recipient_routes where org_id = ${o.orgId}) as routes,
           (select count(*)::int from memories where org_id = ${o.orgId}) as memories,
           (select count(*)::int from api_keys where org_id = ${o.orgId}) as keys`
  const changes = expectOk(await h.request('GET', `/v1/changes?cursor=${cursor}`, { key: o.key })) as { type: string }[]
  return { ...row!, changes: changes.map(c => c.type) }
}
const cursorOf = async (o: TestOrg) => expectOk(await h.request('GET', '/v1/changes/cursor', { key: o.key })).cursor as string

describe('auto-responder', () => {
  test('install creates the function, its route and endpoint, the template and its memory; it answers real mail in the thread', async () => {
    const o = await createOrg()
    const address = await managedAddress(h.ctx, o.orgId)
    const installed = expectOk(await install(o, 'auto-responder', { from_address: address, signature: "Ada's desk" }, { 'idempotency-key': 'auto-1' }), 201)
    expect(installed.created.map((c: { type: string }) => c.type)).toEqual(['template', 'function', 'endpoint', 'route', 'memory'])
    // as the catalog announces
    const entry = (expectOk(await h.request('GET', '/v1/templates/catalog', { key: o.key })) as any[]).find(e => e.slug === 'auto-responder')
    expect(entry.creates.map((c: { type: string }) => c.type)).toEqual(['template', 'function', 'endpoint', 'route', 'memory'])
    const [template, fn, endpoint, route, memory] = installed.created
    expect(template).toMatchObject({ name: 'auto-reply' })
    expect(fn).toMatchObject({ name: 'auto-responder' })
    expect(route).toMatchObject({ name: address })
    expect(memory).toMatchObject({ id: 'auto-responder/config', name: `functions/${fn.id}/memories/auto-responder/config` })
    // each as the API shows it
    expect(expectOk(await h.request('GET', `/v1/functions/${fn.id}`, { key: o.key }))).toMatchObject({
      deploy_status: 'deployed',
      endpoint_id: endpoint.id,
      route: { is_route_target: true },
    })
    expect(expectOk(await h.request('GET', `/v1/routes/${route.id}`, { key: o.key }))).toMatchObject({ pattern: address, endpoint_id: endpoint.id })
    expect(expectOk(await h.request('GET', `/v1/functions/${fn.id}/memories/auto-responder%2Fconfig`, { key: o.key })).value).toEqual({
      enabled: true,
      template_alias: 'auto-reply',
      from: address,
      signature: "Ada's desk",
    })
    // a retry with the key creates nothing more
    const again = await install(o, 'auto-responder', { from_address: address, signature: "Ada's desk" }, { 'idempotency-key': 'auto-1' })
    expect(expectOk(again, 201)).toEqual(installed)
    expect(again.headers.get('idempotent-replayed')).toBe('true')

    const sender = await createOrg()
    const senderAddress = await managedAddress(h.ctx, sender.orgId)
    expectOk(
      await h.request('POST', '/v1/send-mail', {
        key: sender.key,
        body: { from: senderAddress, from_name: 'Grace', to: address, subject: 'Opening hours', body_text: 'When are you open?' },
      }),
    )
    const inbox = await until(
      () => h.request('GET', '/v1/emails', { key: sender.key }).then(r => r.body.data as any[]),
      es => es.some(e => e.subject === 'Re: Opening hours'),
    )
    const reply = inbox.find(e => e.subject === 'Re: Opening hours')
    expect(reply).toBeDefined()
    const full = expectOk(await h.request('GET', `/v1/emails/${reply.id}`, { key: sender.key }))
    expect(full.text).toContain('Hello Grace,')
    expect(full.text).toContain("Ada's desk")
    // the HTML part escaped the signature
    expect(full.html).toContain('Ada&#39;s desk')
    // recorded once the function has returned, which is after its reply was stored
    const [inv] = await until(
      () => h.request('GET', `/v1/functions/${fn.id}/invocations`, { key: o.key }).then(r => r.body.data as any[]),
      is => is.length > 0,
    )
    expect(inv).toMatchObject({ outcome: 'ok', response_status: 200 })
  })

  test('a later step failing (the route pattern is taken) leaves nothing: no template, function, key, endpoint, memory or change', async () => {
    const o = await createOrg()
    const address = await managedAddress(h.ctx, o.orgId)
    const ep = expectOk(await h.request('POST', '/v1/endpoints', { key: o.key, body: { url: receiver.url('/taken'), is_route_target: true } }), 201)
    expectOk(await h.request('POST', '/v1/routes', { key: o.key, body: { pattern: address, endpoint_id: ep.id } }), 201)
    const before = await inventory(o, await cursorOf(o))
    const cursor = await cursorOf(o)
    expectError(await install(o, 'auto-responder', { from_address: address }), 409, 'conflict', /^pattern: a route for /)
    expect(await inventory(o, cursor)).toEqual({ ...before, changes: [] })
    expect(before).toMatchObject({ templates: 0, functions: 0, endpoints: 1, routes: 1, memories: 0 })
  })

  test('a function of the same name is 409 and nothing is created; the plan limit on endpoints, likewise', async () => {
    const o = await createOrg()
    const address = await managedAddress(h.ctx, o.orgId)
    expectOk(
      await h.request('POST', '/v1/functions', {
        key: o.key,
        body: { name: 'auto-responder', code: 'export default { async fetch() { return new Response("mine") } }' },
      }),
      201,
    )
    const cursor = await cursorOf(o)
    const before = await inventory(o, cursor)
    expectError(await install(o, 'auto-responder', { from_address: address }), 409, 'conflict', /^name: a function named auto-responder/)
    expect(await inventory(o, cursor)).toEqual(before)

    // the free plan allows one endpoint: the function's route target would be a second one
    const free = await createOrg({ plan: 'free' })
    const freeAddress = await managedAddress(h.ctx, free.orgId)
    expectOk(await h.request('POST', '/v1/endpoints', { key: free.key, body: { url: receiver.url('/free') } }), 201)
    const freeCursor = await cursorOf(free)
    const freeBefore = await inventory(free, freeCursor)
    expectError(await install(free, 'auto-responder', { from_address: freeAddress }), 403, 'feature_disabled')
    expect(await inventory(free, freeCursor)).toEqual(freeBefore)
  })
})

describe('forward-to-webhook', () => {
  test('install creates a route-target endpoint and its route; mail to the address reaches the URL, signed', async () => {
    const o = await createOrg()
    const address = await managedAddress(h.ctx, o.orgId)
    const path = `/forward-${o.orgId}`
    const installed = expectOk(await install(o, 'forward-to-webhook', { address, url: receiver.url(path) }), 201)
    expect(installed.created.map((c: { type: string; name: string }) => [c.type, c.name])).toEqual([
      ['endpoint', receiver.url(path)],
      ['route', address],
    ])
    const entry = (expectOk(await h.request('GET', '/v1/templates/catalog', { key: o.key })) as any[]).find(e => e.slug === 'forward-to-webhook')
    expect(entry.creates).toEqual([
      { type: 'endpoint', name: '{{url}}' },
      { type: 'route', name: '{{address}}' },
    ])
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'forward me', text: 'x' })
    const [req] = await receiver.waitFor(1, path)
    expect(req!.json).toMatchObject({ event: 'email.received', email: { headers: { subject: 'forward me' } } })
    expect(req!.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
  })

  test('an unsafe URL is refused and nothing is created', async () => {
    const o = await createOrg()
    const address = await managedAddress(h.ctx, o.orgId)
    const cursor = await cursorOf(o)
    const before = await inventory(o, cursor)
    expectError(await install(o, 'forward-to-webhook', { address, url: 'ftp://files.example.com/in' }), 400, 'validation_error', /^url: /)
    expectError(await install(o, 'forward-to-webhook', { address: 'not a pattern', url: receiver.url('/x') }), 400, 'validation_error', /^pattern: /)
    expect(await inventory(o, cursor)).toEqual(before)
  })
})
