/**
 * Memories declared once (memories/operations.ts): what the surfaces do differently, each through
 * a declaration option of the adapters: GraphQL's own `functionId` argument and its list with
 * values always, keyed cursors on every surface, the tools' `if_version` and strict batch input
 * where REST reads headers, and the REST-only and GraphQL-only inputs out of the tools' reach.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/client'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { errorCodes, gql, gqlData } from '../graphql/helpers'
import { mcpClient, toolErrorOf } from '../mcp/helpers'

let t: TestApp
let org: TestOrg
let fnId: string
let mcp: Client

beforeAll(async () => {
  t = await testApp()
  org = await createOrg()
  const fn = expectOk(
    await t.request('POST', '/v1/functions', { key: org.key, body: { name: 'ops-scope', code: `export default { fetch() { return new Response('') } }` } }),
    201,
  )
  fnId = fn.id
  for (const k of ['a', 'b', 'c']) expectOk(await t.request('PUT', `/v1/memories/ops%2F${k}`, { key: org.key, body: { value: { k } } }))
  expectOk(await t.request('PUT', `/v1/functions/${fnId}/memories/ops%2Ffn`, { key: org.key, body: { value: 'fn' } }))
  mcp = await mcpClient(t, org.key, 'modern')
})

const call = async (name: string, args: Record<string, unknown>) => {
  const result = (await mcp.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: any }
  return result
}

describe('GraphQL', () => {
  test("functionId reaches a function's scope; a malformed or unknown one is refused by name", async () => {
    const data = await gqlData(
      t,
      `{ memories(functionId: "${fnId}", prefix: "ops/") { nodes { key value } } memory(key: "ops/fn", functionId: "${fnId}") { value } }`,
      {
        key: org.key,
      },
    )
    expect(data).toEqual({ memories: { nodes: [{ key: 'ops/fn', value: 'fn' }] }, memory: { value: 'fn' } })
    const bad = await gql(t, '{ memories(functionId: "nope") { totalCount } }', { key: org.key })
    expect(errorCodes(bad)).toEqual({ memories: 'validation_error' })
    expect(bad.body.errors[0].message).toBe('functionId: must be a UUID')
    const explicitNull = await gql(t, '{ memory(key: "ops/a", functionId: null) { key } }', { key: org.key })
    expect(explicitNull.body.errors[0].message).toBe('functionId: must be a UUID')
    const unknown = await gql(t, '{ memory(key: "ops/a", functionId: "00000000-0000-7000-8000-000000000000") { key } }', { key: org.key })
    expect(errorCodes(unknown)).toEqual({ memory: 'not_found' })
  })

  test('the list pages by key, with values, and its cursor keeps to its prefix', async () => {
    const first = await gqlData(t, '{ memories(prefix: "ops/", first: 2) { nodes { key value } pageInfo { endCursor hasNextPage } totalCount } }', {
      key: org.key,
    })
    expect(first.memories.nodes).toEqual([
      { key: 'ops/a', value: { k: 'a' } },
      { key: 'ops/b', value: { k: 'b' } },
    ])
    expect(first.memories.totalCount).toBe(3)
    const cursor = first.memories.pageInfo.endCursor
    const next = await gqlData(t, `{ memories(prefix: "ops/", first: 2, after: "${cursor}") { nodes { key } pageInfo { hasNextPage } } }`, { key: org.key })
    expect(next.memories).toEqual({ nodes: [{ key: 'ops/c' }], pageInfo: { hasNextPage: false } })
    const other = await gql(t, `{ memories(prefix: "op", after: "${cursor}") { totalCount } }`, { key: org.key })
    expect(other.body.errors[0].message).toMatch(/^after: /)
  })
})

describe('MCP', () => {
  test("a tool's list cursor pages REST's list too (one cursor scope)", async () => {
    const page = (await call('list_memories', { prefix: 'ops/', limit: 1 })).structuredContent
    expect(page.items.map((m: { key: string }) => m.key)).toEqual(['ops/a'])
    expect(page.items[0].value).toBeUndefined()
    const rest = expectOk(await t.request('GET', `/v1/memories?prefix=ops/&limit=1&cursor=${page.cursor}`, { key: org.key }))
    expect(rest.map((m: { key: string }) => m.key)).toEqual(['ops/b'])
  })

  test('REST-only and GraphQL-only inputs are out of reach: if_match and function_id are ignored', async () => {
    const listed = (await call('list_memories', { prefix: 'ops/', function_id: fnId })).structuredContent
    expect(listed.items.map((m: { key: string }) => m.key)).toEqual(['ops/a', 'ops/b', 'ops/c'])
    const read = (await call('get_memory', { key: 'ops/a' })).structuredContent
    const written = await call('set_memory', { key: 'ops/a', value: { k: 'a' }, if_match: '"1"' })
    expect(written.structuredContent.version).toBeGreaterThan(read.version)
  })

  test('if_version stands for If-Match; the batch refuses arguments it does not name; keys are checked as before', async () => {
    const read = (await call('get_memory', { key: 'ops/b' })).structuredContent
    expect(toolErrorOf(await call('delete_memory', { key: 'ops/b', if_version: read.version + 1000 })).code).toBe('precondition_failed')
    const batch = toolErrorOf(await call('batch_memories', { operations: [{ op: 'check', key: 'ops/b' }], extra: 1 }))
    expect(batch.code).toBe('validation_error')
    expect(toolErrorOf(await call('get_memory', { key: '' })).message).toBe('key: must not be empty')
  })
})

describe('REST', () => {
  test('a DELETE reads its precondition from If-Match alone (a body is not an argument)', async () => {
    expectOk(await t.request('PUT', '/v1/memories/ops%2Fgone', { key: org.key, body: { value: 1 } }))
    const res = await t.request('DELETE', '/v1/memories/ops%2Fgone', { key: org.key, body: { if_version: 999999 } })
    expect(expectOk(res).deleted).toBe(true)
    expectError(await t.request('DELETE', '/v1/memories/ops%2Fb', { key: org.key, headers: { 'if-match': '"1"' } }), 412, 'precondition_failed')
  })
})
