/**
 * A function's runtime key (SERVICE_API_KEY) acts for the organization while the function exists,
 * and nothing it makes may outlive it: it cannot create API keys, or functions (each has a runtime
 * key of its own), on any surface.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { ERAS, mcpClient } from '../mcp/helpers'

const CODE = `export default { async fetch(request, env) { return new Response('ok') } }`

let h: TestApp
let org: TestOrg
let fnId: string
let runtimeKey: string
beforeAll(async () => {
  h = await testApp()
  org = await createOrg({ plan: 'power' })
  fnId = expectOk(await h.request('POST', '/v1/functions', { key: org.key, body: { name: `rk-${crypto.randomUUID().slice(0, 8)}`, code: CODE } }), 201).id
  const sql = await testSql()
  const [row] = await sql<{ runtime_key_sealed: Buffer }[]>`select runtime_key_sealed from functions where id = ${fnId}`
  runtimeKey = h.ctx.keys.decrypt(row!.runtime_key_sealed)
})

describe('a function runtime key', () => {
  test('acts for the organization: reads and ordinary writes work', async () => {
    expect(expectOk(await h.request('GET', '/v1/whoami', { key: runtimeKey }))).toMatchObject({ org_id: org.orgId, user_id: null })
    expectOk(await h.request('GET', '/v1/api-keys', { key: runtimeKey }))
    expectOk(
      await h.request('POST', '/v1/templates', { key: runtimeKey, body: { name: `t-${crypto.randomUUID().slice(0, 8)}`, subject: 'Hi', body_text: 'Hello' } }),
      201,
    )
  })

  test('cannot create an API key, in any spelling of the path, and nothing is written', async () => {
    const before = await h.request('GET', '/v1/api-keys?limit=100', { key: org.key })
    for (const path of ['/v1/api-keys', '/v1/api-keys/', '/v1/./api-keys', '/v1/api-keys?x=1']) {
      const res = await h.request('POST', path, { key: runtimeKey, body: { name: 'escape hatch' } })
      expectError(res, 403, 'forbidden')
      expect(res.body.error.message).toMatch(/runtime key/)
    }
    const after = await h.request('GET', '/v1/api-keys?limit=100', { key: org.key })
    expect(after.body.data.length).toBe(before.body.data.length)
  })

  test('cannot create a function or install a setup that deploys one', async () => {
    expectError(await h.request('POST', '/v1/functions', { key: runtimeKey, body: { name: 'child', code: CODE } }), 403, 'forbidden')
    expectError(await h.request('POST', '/v1/templates/install', { key: runtimeKey, body: { slug: 'auto-responder' } }), 403, 'forbidden')
    const sql = await testSql()
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from functions where org_id = ${org.orgId}`
    expect(row!.n).toBe(1)
  })

  test('still redeploys its own function (no new credential)', async () => {
    expectOk(await h.request('PUT', `/v1/functions/${fnId}`, { key: runtimeKey, body: { code: CODE.replace('ok', 'v2') } }))
  })

  test('MCP: the deploy tool is not offered to it, and calling it is refused', async () => {
    const client = await mcpClient(h, runtimeKey, ERAS[0]!.era)
    const tools = (await client.listTools()).tools.map(t => t.name)
    expect(tools).toContain('list_functions')
    expect(tools).not.toContain('deploy_function')
    await expect(client.callTool({ name: 'deploy_function', arguments: { name: 'child', code: CODE } })).rejects.toThrow()
    await client.close()
  })

  test('an organization key still creates keys and functions', async () => {
    expectOk(await h.request('POST', '/v1/api-keys', { key: org.key, body: { name: 'fine' } }), 201)
  })
})
