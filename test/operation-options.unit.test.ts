/**
 * The declaration options of the second round (http/operation.ts) where no feature's tests
 * exercise them: what an MCP tool publishes and passes on (mcp.input, mcp.args, mcp.params,
 * mcp.items, mcp.title), and the arguments of a GraphQL Query field (graphql.input).
 */
import { describe, expect, test } from 'bun:test'
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { listOperation, operation, type OperationCall } from '../src/http/operation'
import { toolOf } from '../src/mcp/operation-tools'
import { operationFields } from '../src/graphql/operation-fields'

const call = { ctx: {} as never, auth: { orgId: 'org' } as never, signal: new AbortController().signal } as OperationCall
const Uuid = t.String({ format: 'uuid' })

describe('mcp options', () => {
  const seen: unknown[] = []
  const redeploy = operation({
    name: 'redeploy_thing',
    method: 'PUT',
    path: '/v1/things/:id/parts/:partId',
    tag: 'Things',
    summary: 'Redeploy a thing',
    params: { id: Uuid, partId: Uuid },
    resource: 'thing',
    input: t.Object({ name: t.Optional(t.String()), code: t.String(), files: t.Optional(t.Array(t.String())) }),
    output: t.Array(t.String()),
    mcp: {
      title: 'Replace the code',
      input: ['code'],
      params: { partId: 'part_id' },
      args: Type.Object({ thing_id: Type.Optional(Type.String({ format: 'uuid', description: 'omitted: every thing' })) }),
      items: 'by name',
    },
    handle: async (_call, args) => {
      seen.push(args)
      return ['a']
    },
  })
  const tool = toolOf(redeploy)

  test('the tool publishes its chosen input, its own argument names and schemas, and its title', () => {
    expect(tool.title).toBe('Replace the code')
    expect(Object.keys(tool.input.properties)).toEqual(['thing_id', 'part_id', 'code'])
    expect(tool.input.required).toEqual(['part_id', 'code'])
    expect((tool.input.properties.thing_id as { description?: string }).description).toBe('omitted: every thing')
    expect(Object.keys(tool.output.properties)).toEqual(['items'])
    expect((tool.output.properties.items as { description?: string; type?: string }).description).toBe('by name')
  })

  test('an argument the tool does not publish never reaches the handler; an array answers as {items}', async () => {
    const answer = await tool.handle(call, { part_id: 'p', code: 'c', files: ['x'], name: 'n' } as never)
    expect(answer).toEqual({ items: ['a'] } as never)
    expect(seen.at(-1)).toEqual({ id: undefined, partId: 'p', code: 'c' })
  })

  test('without mcp.input every input field is published, as before', () => {
    const all = toolOf(operation({ ...redeploy, mcp: { params: { partId: 'part_id' } } } as never))
    expect(Object.keys(all.input.properties)).toEqual(['thing_id', 'part_id', 'name', 'code', 'files'])
    expect(all.title).toBe('Redeploy a thing')
  })
})

describe('graphql options', () => {
  test('graphql.input takes only some input fields as arguments of the Query field', () => {
    const list = listOperation({
      name: 'list_things',
      method: 'GET',
      path: '/v1/things',
      tag: 'Things',
      summary: 'List things',
      input: t.Object({ enabled: t.Optional(t.Boolean()), target_id: t.Optional(Uuid) }),
      graphql: { field: 'things', type: 'Thing', input: ['enabled'] },
      list: { item: t.Object({ id: Uuid }), scope: () => 'things', fetch: async () => ({ rows: [], total: 0 }), present: row => row },
    })
    const { sdl } = operationFields([list])
    expect(sdl).toContain('things(first: Int = 20, after: String, enabled: Boolean): ThingConnection')
    expect(sdl).not.toContain('targetId')
  })
})
