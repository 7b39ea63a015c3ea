/** Function-scoped memories: /v1/functions/{id}/memories, the runtime key's default scope, deletion with the function. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'

let t: TestApp
let org: TestOrg

beforeAll(async () => {
  t = await testApp()
  org = await createOrg()
})

async function deploy(o: TestOrg, name: string): Promise<{ id: string; runtimeKey: string }> {
  const fn = expectOk(
    await t.request('POST', '/v1/functions', { key: o.key, body: { name, code: `export default { fetch() { return new Response('') } }` } }),
    201,
  )
  const sql = await testSql()
  const [row] = await sql<{ runtime_key_sealed: Buffer }[]>`select runtime_key_sealed from functions where id = ${fn.id}`
  return { id: fn.id, runtimeKey: t.ctx.keys.decrypt(row!.runtime_key_sealed) }
}

describe('function scope', () => {
  test('a function has its own keys, apart from the organization and other functions', async () => {
    const a = await deploy(org, 'scope-a')
    const b = await deploy(org, 'scope-b')
    expectOk(await t.request('PUT', '/v1/memories/state', { key: org.key, body: { value: 'org' } }))
    expectOk(await t.request('PUT', `/v1/functions/${a.id}/memories/state`, { key: org.key, body: { value: 'a' } }))
    expectError(await t.request('GET', `/v1/functions/${b.id}/memories/state`, { key: org.key }), 404, 'not_found')
    expect(expectOk(await t.request('GET', `/v1/functions/${a.id}/memories/state`, { key: org.key })).value).toBe('a')
    expect(expectOk(await t.request('GET', '/v1/memories/state', { key: org.key })).value).toBe('org')
    expect(expectOk(await t.request('GET', `/v1/functions/${a.id}/memories`, { key: org.key })).map((m: { key: string }) => m.key)).toEqual(['state'])
    const batch = expectOk(
      await t.request('POST', `/v1/functions/${a.id}/memories/batch`, { key: org.key, body: { operations: [{ op: 'set', key: 'n', value: 1 }] } }),
    )
    expect(batch.results[0].op).toBe('set')
  })

  test("the runtime key (SERVICE_API_KEY) works in its own function's scope at /v1/memories", async () => {
    const fn = await deploy(org, 'runtime')
    expectOk(await t.request('PUT', '/v1/memories/counter', { key: fn.runtimeKey, body: { value: 7 } }))
    expect(expectOk(await t.request('GET', `/v1/functions/${fn.id}/memories/counter`, { key: org.key })).value).toBe(7)
    expectError(await t.request('GET', '/v1/memories/counter', { key: org.key }), 404, 'not_found')
  })

  test('deleting the function deletes its memories; its scope is then 404', async () => {
    const o = await createOrg()
    const fn = await deploy(o, 'doomed')
    expectOk(await t.request('PUT', `/v1/functions/${fn.id}/memories/x`, { key: o.key, body: { value: 'x' } }))
    expectOk(await t.request('DELETE', `/v1/functions/${fn.id}`, { key: o.key }))
    expectError(await t.request('GET', `/v1/functions/${fn.id}/memories/x`, { key: o.key }), 404, 'not_found')
    const sql = await testSql()
    const [left] = await sql`select count(*)::int as n from memories where function_id = ${fn.id}`
    expect(left!.n).toBe(0)
    const [usage] = await sql`select keys::int from memory_usage where org_id = ${o.orgId}`
    expect(usage!.keys).toBe(0)
  })

  test("another organization's function is 404 on every route, and its keys stay as they were", async () => {
    const fn = await deploy(org, 'private-fn')
    expectOk(await t.request('PUT', `/v1/functions/${fn.id}/memories/k`, { key: org.key, body: { value: 'mine' } }))
    const other = await createOrg()
    const base = `/v1/functions/${fn.id}/memories`
    for (const [method, path, body] of [
      ['GET', base],
      ['GET', `${base}/k`],
      ['PUT', `${base}/k`, { value: 1 }],
      ['PATCH', `${base}/k`, { a: 1 }],
      ['DELETE', `${base}/k`],
      ['POST', `${base}/batch`, { operations: [{ op: 'delete', key: 'k' }] }],
    ] as [string, string, unknown?][]) {
      expectError(await t.request(method, path, { key: other.key, body }), 404, 'not_found')
    }
    expect(expectOk(await t.request('GET', `${base}/k`, { key: org.key })).value).toBe('mine')
  })

  test('a connection key may not call any function memory route (403)', async () => {
    const fn = await deploy(org, 'conn-fn')
    const bound = await managedAddress(t.ctx, org.orgId)
    const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address: bound } }), 201)
    const conn = expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
    const base = `/v1/functions/${fn.id}/memories`
    for (const [method, path, body] of [
      ['GET', base],
      ['GET', `${base}/k`],
      ['PUT', `${base}/k`, { value: 1 }],
      ['PATCH', `${base}/k`, { a: 1 }],
      ['DELETE', `${base}/k`],
      ['POST', `${base}/batch`, { operations: [{ op: 'check', key: 'k' }] }],
    ] as [string, string, unknown?][]) {
      expectError(await t.request(method, path, { key: conn, body }), 403, 'forbidden')
    }
  })
})
