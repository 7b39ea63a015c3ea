/**
 * Wake schedules: the scheduler driven by a controllable clock (scheduleDueWakes takes `now`),
 * cron across daylight saving time, missed runs, dedupe keys, delivery with a stable run_id,
 * and the organization and connection-key boundaries.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { startReceiver, type Receiver } from '../helpers/receiver'
import { startWorker, type Worker } from '../../src/jobs/worker'
import { wakeRunJob } from '../../src/wake/run.job'
import type { WakeRow } from '../../src/wake/queries'
import { createWake, scheduleDueWakes } from '../../src/wake/service'

let t: TestApp
let org: TestOrg
let receiver: Receiver
let worker: Worker

beforeAll(async () => {
  t = await testApp({ WEBHOOK_ALLOW_LOOPBACK: 'true' })
  org = await createOrg()
  receiver = startReceiver()
  // only the delivery of runs: the scheduler is driven by hand, with its own clock
  worker = await startWorker(t.ctx, { kinds: [wakeRunJob], pollMs: 50 })
})
afterAll(async () => {
  await worker.stop(1000)
  receiver.stop()
})

async function endpoint(o: TestOrg, path: string): Promise<string> {
  const sql = await testSql()
  const id = crypto.randomUUID()
  await sql`insert into endpoints (id, org_id, kind, url, enabled, is_route_target, rules) values (${id}, ${o.orgId}, 'http', ${receiver.url(path)}, true, true, '{}')`
  return id
}

const wakeOf = async (id: string) => (await (await testSql())<WakeRow[]>`select * from wakes where id = ${id}`)[0]!
const runsOf = async (id: string) =>
  await (await testSql())<
    { id: string; scheduled_for: Date; late: boolean; status: string; manual: boolean }[]
  >`select * from wake_runs where wake_id = ${id} order by created_at`
const at = (iso: string) => new Date(iso)

describe('scheduling with a controllable clock', () => {
  test('every_minutes: due slots fire once each; missed slots after downtime fire once, marked late', async () => {
    const o = await createOrg()
    const ep = await endpoint(o, `/every-${o.orgId}`)
    const t0 = at('2030-01-01T10:00:00Z')
    const { row } = await createWake(
      t.ctx.sql,
      o.orgId,
      { target: { type: 'endpoint', id: ep }, schedule: { every_minutes: 5 }, command: { name: 'tick' } },
      t0,
    )
    expect(row.next_run_at).toEqual(at('2030-01-01T10:05:00Z'))
    await scheduleDueWakes(t.ctx, at('2030-01-01T10:04:59Z'))
    expect(await runsOf(row.id)).toHaveLength(0)
    await scheduleDueWakes(t.ctx, at('2030-01-01T10:05:01Z'))
    // the same slot again (another scheduler, a retry) fires nothing more
    await scheduleDueWakes(t.ctx, at('2030-01-01T10:05:02Z'))
    let runs = await runsOf(row.id)
    expect(runs.map(r => [r.scheduled_for.toISOString(), r.late])).toEqual([['2030-01-01T10:05:00.000Z', false]])
    expect((await wakeOf(row.id)).next_run_at).toEqual(at('2030-01-01T10:10:00Z'))
    // the service was down for an hour: eleven slots missed, one late run, the cadence kept
    await scheduleDueWakes(t.ctx, at('2030-01-01T11:02:00Z'))
    runs = await runsOf(row.id)
    expect(runs.map(r => [r.scheduled_for.toISOString(), r.late])).toEqual([
      ['2030-01-01T10:05:00.000Z', false],
      ['2030-01-01T10:10:00.000Z', true],
    ])
    expect((await wakeOf(row.id)).next_run_at).toEqual(at('2030-01-01T11:05:00Z'))
    // the two runs are delivered by concurrent jobs: they may arrive in either order
    const [first, second] = (await receiver.waitFor(2, `/every-${o.orgId}`)).sort((a, b) => a.json.scheduled_for.localeCompare(b.json.scheduled_for))
    expect([first!.json.late, second!.json.late]).toEqual([false, true])
    expect(second!.json).toMatchObject({ type: 'wake.run', command: { name: 'tick' }, scheduled_for: '2030-01-01T10:10:00.000Z' })
  })

  test('cron in a zone with daylight saving time: the skipped hour fires at the first valid minute, the repeated hour once', async () => {
    const o = await createOrg()
    const ep = await endpoint(o, `/dst-${o.orgId}`)
    // 2:30 does not exist in New York on 2026-03-08 (clocks go from 2:00 to 3:00 EDT)
    const spring = (
      await createWake(
        t.ctx.sql,
        o.orgId,
        { target: { type: 'endpoint', id: ep }, schedule: { cron: '30 2 * * *', time_zone: 'America/New_York' }, command: { name: 'spring' } },
        at('2026-03-07T12:00:00Z'),
      )
    ).row
    expect(spring.next_run_at).toEqual(at('2026-03-08T07:00:00Z'))
    await scheduleDueWakes(t.ctx, at('2026-03-08T07:00:05Z'))
    expect((await wakeOf(spring.id)).next_run_at).toEqual(at('2026-03-09T06:30:00Z'))
    // 1:30 happens twice on 2026-11-01 (EDT, then EST): one run
    const fall = (
      await createWake(
        t.ctx.sql,
        o.orgId,
        { target: { type: 'endpoint', id: ep }, schedule: { cron: '30 1 * * *', time_zone: 'America/New_York' }, command: { name: 'fall' } },
        at('2026-10-31T12:00:00Z'),
      )
    ).row
    expect(fall.next_run_at).toEqual(at('2026-11-01T05:30:00Z'))
    await scheduleDueWakes(t.ctx, at('2026-11-01T05:30:05Z'))
    expect((await wakeOf(fall.id)).next_run_at).toEqual(at('2026-11-02T06:30:00Z'))
    await scheduleDueWakes(t.ctx, at('2026-11-01T06:30:05Z'))
    expect(await runsOf(fall.id)).toHaveLength(1)
  })

  test('a one-shot wake fires once and disables itself after delivery', async () => {
    const o = await createOrg()
    const ep = await endpoint(o, `/once-${o.orgId}`)
    const { row } = await createWake(
      t.ctx.sql,
      o.orgId,
      { target: { type: 'endpoint', id: ep }, schedule: { at: '2030-06-01T08:00:00+02:00' }, command: { name: 'once' } },
      at('2030-05-01T00:00:00Z'),
    )
    expect(row.next_run_at).toEqual(at('2030-06-01T06:00:00Z'))
    await scheduleDueWakes(t.ctx, at('2030-06-01T06:00:01Z'))
    expect((await wakeOf(row.id)).next_run_at).toBeNull()
    await receiver.waitFor(1, `/once-${o.orgId}`)
    for (;;) {
      const [run] = await runsOf(row.id)
      if (run!.status !== 'pending') break
      await Bun.sleep(20)
    }
    expect((await wakeOf(row.id)).enabled).toBe(false)
    expect((await runsOf(row.id)).map(r => r.status)).toEqual(['delivered'])
  })
})

describe('the API', () => {
  test('create, read, list, patch, delete; the same dedupe_key updates instead of duplicating', async () => {
    const o = await createOrg()
    const ep = await endpoint(o, '/api')
    const body = {
      target: { type: 'endpoint', id: ep },
      schedule: { cron: '0 9 * * 1-5', time_zone: 'Europe/Paris' },
      command: { name: 'standup', payload: { team: 'a' } },
      dedupe_key: 'standup',
    }
    const created = await t.request('POST', '/v1/wake', { key: o.key, body })
    const wake = expectOk(created, 201)
    expect(wake).toMatchObject({
      target: { type: 'endpoint', id: ep },
      schedule: { type: 'cron', cron: '0 9 * * 1-5', time_zone: 'Europe/Paris', at: null, every_minutes: null },
      enabled: true,
      dedupe_key: 'standup',
    })
    expect(new Date(wake.next_run_at).getTime()).toBeGreaterThan(Date.now())
    const again = expectOk(await t.request('POST', '/v1/wake', { key: o.key, body: { ...body, command: { name: 'standup', payload: { team: 'b' } } } }), 200)
    expect(again.id).toBe(wake.id)
    expect(again.command.payload).toEqual({ team: 'b' })
    const list = await t.request('GET', '/v1/wake', { key: o.key })
    expect(expectOk(list).map((w: { id: string }) => w.id)).toEqual([wake.id])
    const patched = expectOk(await t.request('PATCH', `/v1/wake/${wake.id}`, { key: o.key, body: { enabled: false } }))
    expect(patched.enabled).toBe(false)
    expect(expectOk(await t.request('GET', `/v1/wake/${wake.id}`, { key: o.key })).enabled).toBe(false)
    expectOk(await t.request('DELETE', `/v1/wake/${wake.id}`, { key: o.key }))
    expectError(await t.request('GET', `/v1/wake/${wake.id}`, { key: o.key }), 404, 'not_found')
  })

  test('bad schedules are validation errors naming the field', async () => {
    const o = await createOrg()
    const ep = await endpoint(o, '/bad')
    const bad = async (schedule: unknown, pattern: RegExp) =>
      expectError(
        await t.request('POST', '/v1/wake', { key: o.key, body: { target: { type: 'endpoint', id: ep }, schedule, command: { name: 'x' } } }),
        400,
        'validation_error',
        pattern,
      )
    await bad({}, /^schedule: needs exactly one/)
    await bad({ cron: '0 9 * * *', every_minutes: 5 }, /^schedule: needs exactly one/)
    await bad({ cron: 'not a cron' }, /^schedule\.cron: /)
    await bad({ cron: '*/10 * * * * *' }, /^schedule\.cron: must have five fields/)
    await bad({ cron: '0 9 * * *', time_zone: 'Mars/Olympus' }, /^schedule\.time_zone: /)
    await bad({ every_minutes: 0 }, /every_minutes/)
    await bad({ at: '2020-01-01T00:00:00Z' }, /^schedule\.at: must be in the future/)
    await bad({ at: '2030-01-01T00:00:00' }, /^schedule\.at: must carry a time zone/)
    await bad({ every_minutes: 5, time_zone: 'UTC' }, /^schedule\.time_zone: goes only with cron/)
    expectError(
      await t.request('POST', '/v1/wake', {
        key: o.key,
        body: { target: { type: 'endpoint', id: crypto.randomUUID() }, schedule: { every_minutes: 5 }, command: { name: 'x' } },
      }),
      404,
      'not_found',
    )
  })

  test('the plan caps enabled wakes', async () => {
    const o = await createOrg({ plan: 'free' })
    const ep = await endpoint(o, '/cap')
    for (let i = 0; i < 10; i++)
      expectOk(
        await t.request('POST', '/v1/wake', {
          key: o.key,
          body: { target: { type: 'endpoint', id: ep }, schedule: { every_minutes: 60 }, command: { name: `w${i}` } },
        }),
        201,
      )
    expectError(
      await t.request('POST', '/v1/wake', {
        key: o.key,
        body: { target: { type: 'endpoint', id: ep }, schedule: { every_minutes: 60 }, command: { name: 'one-too-many' } },
      }),
      403,
      'quota_exceeded',
    )
    expectOk(
      await t.request('POST', '/v1/wake', {
        key: o.key,
        body: { target: { type: 'endpoint', id: ep }, schedule: { every_minutes: 60 }, command: { name: 'disabled' }, enabled: false },
      }),
      201,
    )
  })
})

describe('delivery', () => {
  test('a run retried after a failure keeps its run_id, signed like a webhook', async () => {
    const o = await createOrg()
    const path = `/retry-${o.orgId}`
    receiver.respond(path, 500, 200)
    const ep = await endpoint(o, path)
    const wake = expectOk(
      await t.request('POST', '/v1/wake', {
        key: o.key,
        body: { target: { type: 'endpoint', id: ep }, schedule: { every_minutes: 60 }, command: { name: 'retry-me' } },
      }),
      201,
    )
    const run = expectOk(await t.request('POST', `/v1/wake/${wake.id}/run`, { key: o.key }), 202)
    expect(run).toMatchObject({ wake_id: wake.id, manual: true, status: 'pending' })
    const [first, second] = await receiver.waitFor(2, path, 30_000)
    expect(first!.json.run_id).toBe(run.run_id)
    expect(second!.json.run_id).toBe(run.run_id)
    expect([first!.json.attempt, second!.json.attempt]).toEqual([1, 2])
    expect(second!.headers['x-wake-run-id']).toBe(run.run_id)
    expect(second!.headers['webhook-id']).toBe(run.run_id)
    expect(second!.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
    let runs: any[] = []
    for (;;) {
      runs = expectOk(await t.request('GET', `/v1/wake/${wake.id}/runs`, { key: o.key }))
      if (runs[0].status !== 'pending') break
      await Bun.sleep(20)
    }
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ run_id: run.run_id, status: 'delivered', attempts: 2, response_status: 200 })
  })

  test('an agent connection target gets a wake.command change on its own feed', async () => {
    const o = await createOrg()
    const bound = await managedAddress(t.ctx, o.orgId)
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: o.key, body: { address: bound } }), 201)
    const claimed = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } }))
    const sql = await testSql()
    const [conn] = await sql<{ id: string }[]>`select id from agent_connections where org_id = ${o.orgId} and address = ${bound} and revoked_at is null`
    const start = expectOk(await t.request('GET', '/v1/changes/cursor', { key: claimed.connection_key })).cursor
    const wake = expectOk(
      await t.request('POST', '/v1/wake', {
        key: o.key,
        body: {
          target: { type: 'agent_connection', id: conn!.id },
          schedule: { every_minutes: 60 },
          command: { name: 'check-inbox', payload: { folder: 'in' } },
        },
      }),
      201,
    )
    const polling = t.request('GET', `/v1/changes?cursor=${start}&types=wake.command&wait=30`, { key: claimed.connection_key })
    const run = expectOk(await t.request('POST', `/v1/wake/${wake.id}/run`, { key: o.key }), 202)
    const [change] = expectOk(await polling)
    expect(change).toMatchObject({ type: 'wake.command', data: { run_id: run.run_id, command: { name: 'check-inbox', payload: { folder: 'in' } } } })
    // the poll would have waited 30 s: answering within the test's 15 s, it was woken
  }, 15_000)
})

describe('boundaries', () => {
  test("another organization's wake is 404; its targets cannot be named", async () => {
    const a = await createOrg()
    const b = await createOrg()
    const ep = await endpoint(a, '/a')
    const wake = expectOk(
      await t.request('POST', '/v1/wake', {
        key: a.key,
        body: { target: { type: 'endpoint', id: ep }, schedule: { every_minutes: 60 }, command: { name: 'x' } },
      }),
      201,
    )
    for (const [method, path, body] of [
      ['GET', `/v1/wake/${wake.id}`],
      ['PATCH', `/v1/wake/${wake.id}`, { enabled: false }],
      ['DELETE', `/v1/wake/${wake.id}`],
      ['POST', `/v1/wake/${wake.id}/run`],
      ['GET', `/v1/wake/${wake.id}/runs`],
      ['POST', '/v1/wake', { target: { type: 'endpoint', id: ep }, schedule: { every_minutes: 60 }, command: { name: 'x' } }],
    ] as [string, string, unknown?][]) {
      expectError(await t.request(method, path, { key: b.key, body }), 404, 'not_found')
    }
    expect(expectOk(await t.request('GET', '/v1/wake', { key: b.key }))).toEqual([])
  })

  test('a connection key may not manage wakes (403)', async () => {
    const bound = await managedAddress(t.ctx, org.orgId)
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address: bound } }), 201)
    const conn = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    const id = crypto.randomUUID()
    for (const [method, path, body] of [
      ['GET', '/v1/wake'],
      ['POST', '/v1/wake', { target: { type: 'endpoint', id }, schedule: { every_minutes: 5 }, command: { name: 'x' } }],
      ['GET', `/v1/wake/${id}`],
      ['PATCH', `/v1/wake/${id}`, { enabled: false }],
      ['DELETE', `/v1/wake/${id}`],
      ['POST', `/v1/wake/${id}/run`],
      ['GET', `/v1/wake/${id}/runs`],
    ] as [string, string, unknown?][]) {
      expectError(await t.request(method, path, { key: conn, body }), 403, 'forbidden')
    }
  })
})
