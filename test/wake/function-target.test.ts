/**
 * A wake whose target is a function, end to end: the scheduler job fires the due slot, the
 * `wake.run` job invokes the function's current deployment in a real QuickJS sandbox with a
 * request signed like a webhook delivery (the function checks it), the function reaches its
 * own memories through SERVICE_API_BASE_URL with SERVICE_API_KEY, and the invocation, its
 * logs, the run and the feed record what happened.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestApp } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { until } from '../helpers/until'
import { startWorker, type Worker } from '../../src/jobs/worker'
import type { Job } from '../../src/jobs/queue'
import { wakeRunJob } from '../../src/wake/run.job'
import { wakeSchedulerJob } from '../../src/wake/scheduler.job'
import { createWake } from '../../src/wake/service'

let t: TestApp
let worker: Worker

beforeAll(async () => {
  t = await testApp({ FUNCTION_WALL_CLOCK_MS: '10000', FUNCTION_CPU_MS: '700' })
  // only run delivery; the scheduler job is run by the test, once
  worker = await startWorker(t.ctx, { kinds: [wakeRunJob], pollMs: 50 })
})
afterAll(async () => {
  await worker.stop(1000)
})

const CODE = `
const hex = buf => [...new Uint8Array(buf)].map(b => b.toString(16).padStart(2, '0')).join('')
export default {
  async fetch(request, env) {
    const body = await request.text()
    // the run is signed like a webhook delivery, with the organization's signing secret
    const header = request.headers.get('service-signature')
    const t = header.split(',')[0].slice(2)
    const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(env.SERVICE_WEBHOOK_SECRET), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    const expected = hex(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(t + '.' + body)))
    if (!header.split(',').slice(1).some(v => v === 'v1=' + expected)) return new Response('bad signature', { status: 401 })
    const run = JSON.parse(body)
    if (request.headers.get('webhook-id') !== run.run_id) return new Response('webhook-id is not the run id', { status: 400 })
    console.log('woken ' + run.run_id)
    const res = await fetch(env.SERVICE_API_BASE_URL + '/memories/last-wake', {
      method: 'PUT',
      headers: { authorization: 'Bearer ' + env.SERVICE_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ value: { run_id: run.run_id, command: run.command, late: run.late, header: request.headers.get('x-wake-run-id') } }),
    })
    return new Response(JSON.stringify({ memory_status: res.status }), { status: res.ok ? 200 : 500 })
  },
}`

type Change = { id: string; type: string; resource: { type: string; id: string }; data: Record<string, any> }

describe('a wake targeting a function', () => {
  test('the scheduler job fires it; the function runs in the sandbox, writes its memory; invocation, logs, run and feed record it', async () => {
    const o = await createOrg()
    const start = expectOk(await t.request('GET', '/v1/changes/cursor', { key: o.key })).cursor
    const fn = expectOk(await t.request('POST', '/v1/functions', { key: o.key, body: { name: 'woken', code: CODE } }), 201)
    expect(fn.deploy_status).toBe('deployed')
    // created five minutes and two seconds ago, every five minutes: its first slot was two seconds ago
    const created = new Date(Date.now() - 302_000)
    const { row: wake } = await createWake(
      t.ctx.sql,
      o.orgId,
      { target: { type: 'function', id: fn.id }, schedule: { every_minutes: 5 }, command: { name: 'digest', payload: { since: 'yesterday' } } },
      created,
    )
    await wakeSchedulerJob.handle(t.ctx, {}, {} as Job<Record<string, never>>)

    const runs = await until(
      async () => expectOk(await t.request('GET', `/v1/wake/${wake.id}/runs`, { key: o.key })) as any[],
      r => r.length === 1 && r[0].status !== 'pending',
    )
    const run = runs[0]
    expect(run).toMatchObject({ wake_id: wake.id, status: 'delivered', response_status: 200, attempts: 1, manual: false, late: false })
    expect(run.scheduled_for).toBe(new Date(created.getTime() + 300_000).toISOString())

    // the function wrote its own scope's memory with the runtime key
    const memory = expectOk(await t.request('GET', `/v1/functions/${fn.id}/memories/last-wake`, { key: o.key }))
    expect(memory.value).toEqual({ run_id: run.run_id, command: { name: 'digest', payload: { since: 'yesterday' } }, late: false, header: run.run_id })
    expect((await t.request('GET', '/v1/memories/last-wake', { key: o.key })).status).toBe(404)

    // the invocation and its log line are recorded
    const [invocation, ...more] = expectOk(await t.request('GET', `/v1/functions/${fn.id}/invocations`, { key: o.key })) as any[]
    expect(more).toHaveLength(0)
    expect(invocation).toMatchObject({ outcome: 'ok', response_status: 200, deployment_id: fn.current_deployment_id })
    const detail = expectOk(await t.request('GET', `/v1/functions/${fn.id}/invocations/${invocation.id}`, { key: o.key }))
    expect(JSON.stringify(detail)).toContain(`woken ${run.run_id}`)

    // and the feed has the deployment, the invocation, the memory write and the run, in causal order
    const changes = expectOk(await t.request('GET', `/v1/changes?cursor=${start}`, { key: o.key })) as Change[]
    const types = changes.map(c => c.type)
    expect(types).toEqual(['function.deployed', 'memory.set', 'function.invoked', 'wake.run_delivered'])
    expect(changes[0]).toMatchObject({
      resource: { type: 'deployment', id: fn.current_deployment_id },
      data: { function_id: fn.id, status: 'deployed', is_current: true, deploy_error: null },
    })
    expect(changes[1]).toMatchObject({ resource: { type: 'memory', id: 'last-wake' }, data: { key: 'last-wake', scope: fn.id } })
    expect(changes[2]).toMatchObject({
      resource: { type: 'invocation', id: invocation.id },
      data: { function_id: fn.id, deployment_id: fn.current_deployment_id, outcome: 'ok', response_status: 200, delivery_id: null, email_id: null },
    })
    expect(changes[3]).toMatchObject({ resource: { type: 'wake_run', id: run.run_id }, data: { wake_id: wake.id, command: 'digest', response_status: 200 } })
  })
})
