/** Templates and wakes through /graphql, compared with the REST answers; other organizations' are not_found. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectOk } from '../helpers/envelope'
import { createWake } from '../../src/wake/service'
import { errorCodes, gql, gqlData } from './helpers'

let t: TestApp
let org: TestOrg
const rest: Record<string, any> = {}

beforeAll(async () => {
  t = await testApp()
  org = await createOrg()
  rest.template = expectOk(
    await t.request('POST', '/v1/templates', {
      key: org.key,
      body: { name: 'Welcome', alias: 'welcome', subject: 'Hi {{name}}', body_text: 'Hi {{name}}', variables: [{ name: 'name' }] },
    }),
    201,
  )
  // a wake needs a target; an endpoint row is enough, nothing is delivered here
  const endpoint = randomUUIDv7()
  await (await testSql())`insert into endpoints (id, org_id, kind, url, enabled, is_route_target, rules) values (${endpoint}, ${org.orgId}, 'http', 'https://hooks.example/wake', true, true, '{}')`
  const { row } = await createWake(t.ctx.sql, org.orgId, {
    target: { type: 'endpoint', id: endpoint },
    schedule: { every_minutes: 30 },
    command: { name: 'digest', payload: { since: 'yesterday' } },
  })
  rest.wake = expectOk(await t.request('GET', `/v1/wake/${row.id}`, { key: org.key }))
  rest.run = expectOk(await t.request('POST', `/v1/wake/${row.id}/run`, { key: org.key }), 202)
})

describe('a query per type', () => {
  test('Template', async () => {
    const x = rest.template
    const data = await gqlData(
      t,
      `{ templates { totalCount nodes { id } } template(id: "${x.id}") { name alias subject bodyText bodyHtml variables createdAt updatedAt } }`,
      { key: org.key },
    )
    expect(data.templates).toEqual({ totalCount: 1, nodes: [{ id: x.id }] })
    expect(data.template).toEqual({
      name: 'Welcome',
      alias: 'welcome',
      subject: x.subject,
      bodyText: x.body_text,
      bodyHtml: null,
      variables: x.variables,
      createdAt: x.created_at,
      updatedAt: x.updated_at,
    })
  })

  test('Wake, WakeTarget, WakeSchedule, WakeCommand, WakeRun', async () => {
    const w = rest.wake
    const data = await gqlData(
      t,
      `{
      wakes(enabled: true) { totalCount nodes { id } }
      wake(id: "${w.id}") { target { type id } schedule { type everyMinutes cron } command { name payload } dedupeKey enabled nextRunAt createdAt }
      wakeRuns(wakeId: "${w.id}") { totalCount nodes { runId wakeId scheduledFor late manual status attempts } }
    }`,
      { key: org.key },
    )
    expect(data.wakes).toEqual({ totalCount: 1, nodes: [{ id: w.id }] })
    expect(data.wake).toEqual({
      target: w.target,
      schedule: { type: w.schedule.type, everyMinutes: 30, cron: null },
      command: { name: 'digest', payload: { since: 'yesterday' } },
      dedupeKey: null,
      enabled: true,
      nextRunAt: w.next_run_at,
      createdAt: w.created_at,
    })
    const r = rest.run
    expect(data.wakeRuns).toEqual({
      totalCount: 1,
      nodes: [{ runId: r.run_id, wakeId: w.id, scheduledFor: r.scheduled_for, late: false, manual: true, status: r.status, attempts: r.attempts }],
    })
  })

  test("another organization's template and wake are not_found", async () => {
    const other = await createOrg()
    const res = await gql(
      t,
      `{ templates { totalCount } template(id: "${rest.template.id}") { id } wake(id: "${rest.wake.id}") { id } wakeRuns(wakeId: "${rest.wake.id}") { totalCount } }`,
      { key: other.key },
    )
    expect(res.body.data).toEqual({ templates: { totalCount: 0 }, template: null, wake: null, wakeRuns: null })
    expect(errorCodes(res)).toEqual({ template: 'not_found', wake: 'not_found', wakeRuns: 'not_found' })
  })
})
