/**
 * The MCP tools made from declared operations (src/mcp/operation-tools.ts): what a tool publishes
 * and validates where its operation's REST route takes something else.
 */
import { describe, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { t } from 'elysia'
import { operation } from '../../src/http/operation'
import { toolOf } from '../../src/mcp/operation-tools'
import { jsonSchema } from '../../src/mcp/schema'
import { TOOLS } from '../../src/mcp/server'

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
})
