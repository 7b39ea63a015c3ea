/**
 * The MCP tools made from declared operations (src/mcp/operation-tools.ts): what a tool publishes
 * and validates where its operation's REST route takes something else.
 */
import { describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { t } from 'elysia'
import type { Auth } from '../../src/auth/principal'
import type { AppContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { listOperation, operation, type OperationCall } from '../../src/http/operation'
import { toolOf } from '../../src/mcp/operation-tools'
import { jsonSchema } from '../../src/mcp/schema'
import { TOOLS } from '../../src/mcp/server'

const call = {
  ctx: { keys: new ServerKeys('unit-test-secret-0123456789abcdef') } as unknown as AppContext,
  auth: {} as Auth,
  signal: new AbortController().signal,
}

describe('operation tools', () => {
  test("a declared integer is a number alone: Elysia's numeric string is neither published nor accepted", () => {
    const tool = toolOf(
      operation({
        name: 'count_things',
        method: 'POST',
        path: '/v1/things',
        tag: 'Things',
        summary: 'Count things',
        input: t.Object({ every: t.Integer({ minimum: 1, maximum: 60 }), ratio: t.Optional(t.Numeric({ minimum: 0 })) }),
        output: t.Object({}),
        handle: async () => ({}),
      }),
    )
    expect(jsonSchema(tool.input).properties).toEqual({ every: { minimum: 1, maximum: 60, type: 'integer' }, ratio: { minimum: 0, type: 'number' } })
    expect(Value.Check(tool.input, { every: 5, ratio: 0.5 })).toBe(true)
    for (const bad of [{ every: '5' }, { every: '0' }, { every: '99999999' }, { every: 0 }, { every: 61 }, { every: 5, ratio: '1' }, { every: 5, ratio: -1 }]) {
      expect({ bad, valid: Value.Check(tool.input, bad) }).toEqual({ bad, valid: false })
    }
  })

  test('reschedule_email refuses a numeric string for repeat.every_minutes by its schema', () => {
    const tool = TOOLS.find(x => x.name === 'reschedule_email')!
    const id = crypto.randomUUID()
    expect(Value.Check(tool.input, { send_id: id, repeat: { every_minutes: 5 } })).toBe(true)
    expect(Value.Check(tool.input, { send_id: id, repeat: { every_minutes: '5' } })).toBe(false)
    expect(Value.Check(tool.input, { send_id: id, repeat: { every_minutes: '99999999' } })).toBe(false)
  })

  test('mcp.input, mcp.rename: the tool takes some of the input fields, in its order and by its names; the others never reach the handler', async () => {
    const seen: unknown[] = []
    const tool = toolOf(
      listOperation({
        name: 'list_things',
        method: 'GET',
        path: '/v1/things',
        tag: 'Things',
        summary: 'List things, newest first; long-poll with wait',
        input: t.Object({ q: t.Optional(t.String()), wait: t.Optional(t.Integer()), kind: t.Optional(t.String()), since: t.Optional(t.String()) }),
        mcp: { title: 'List things', input: ['since', 'q'], rename: { q: 'query' } },
        list: {
          item: t.Object({ id: t.String() }),
          scope: () => 'things',
          fetch: async (_call, args) => (seen.push(args), { rows: [], total: 0 }),
          present: row => row,
        },
      }),
    )
    expect(tool.title).toBe('List things')
    expect(Object.keys(tool.input.properties)).toEqual(['limit', 'cursor', 'since', 'query'])
    await tool.handle(call, { query: 'a', since: 'x', wait: 5, kind: 'k', q: 'not the tool argument' } as never)
    expect(seen).toEqual([{ q: 'a', since: 'x' }])
  })

  test('list.prepare: its lookup comes before the cursor is read, and fetch gets its answer', async () => {
    const seen: unknown[] = []
    const op = (prepare: () => Promise<unknown>) =>
      toolOf(
        listOperation({
          name: 'list_things',
          method: 'GET',
          path: '/v1/things',
          tag: 'Things',
          summary: 'List things',
          list: {
            item: t.Object({ id: t.String() }),
            scope: () => 'things',
            prepare,
            fetch: async (_call, _args, _page, prepared) => (seen.push(prepared), { rows: [], total: 0 }),
            present: row => row,
          },
        }),
      )
    const missing = op(() => Promise.reject(new Error('not_found first')))
    await expect(missing.handle(call, { cursor: 'not-a-cursor' } as never)).rejects.toThrow('not_found first')
    await op(async () => 'looked up').handle(call, {} as never)
    expect(seen).toEqual(['looked up'])
    await expect(op(async () => 'looked up').handle(call, { cursor: 'not-a-cursor' } as never)).rejects.toThrow('is not a cursor returned by this list')
  })

  test("mcp.output, mcp.present: the tool's own answer, made from the handler's", async () => {
    const tool = toolOf(
      operation({
        name: 'get_thing',
        method: 'GET',
        path: '/v1/things/:id',
        tag: 'Things',
        summary: 'One thing',
        params: { id: t.String({ format: 'uuid' }) },
        resource: 'thing',
        output: t.Object({ id: t.String() }),
        mcp: {
          output: t.Object({ id: t.String(), url: t.String() }),
          present: (c: OperationCall, thing: { id: string }) => ({ ...thing, url: `https://things.example/${thing.id}?k=${c.auth.orgId}` }),
        },
        handle: async (_call, { id }) => ({ id }),
      }),
    )
    expect(Object.keys(tool.output.properties)).toEqual(['id', 'url'])
    const id = crypto.randomUUID()
    expect(await tool.handle({ ...call, auth: { orgId: 'o' } as Auth }, { thing_id: id } as never)).toEqual({ id, url: `https://things.example/${id}?k=o` })
  })
})
