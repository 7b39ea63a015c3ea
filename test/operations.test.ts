/**
 * Each operation declared once (src/operations.ts): every MCP tool and every GraphQL Query field
 * stands for a REST operation that the OpenAPI document lists, and those made from declarations
 * are exactly the declared ones. The tools and fields still written by hand are listed below, and
 * the lists may only shrink: a new tool or field is declared as an operation.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { isList, pathParams } from '../src/http/operation'
import { OPERATIONS } from '../src/operations'
import { TOOLS } from '../src/mcp/server'
import { graphqlSchema } from '../src/graphql/schema'
import { testApp } from './helpers/app'

/** Written by hand still: to be declared as operations (docs/architecture.md, "Operations"). */
const HAND_WRITTEN_TOOLS = new Set([
  'batch_memories',
  'create_payment_challenge',
  'delete_memory',
  'forward_email',
  'get_email',
  'get_memory',
  'list_emails',
  'list_memories',
  'patch_memory',
  'reply_to_email',
  'search_emails',
  'send_email',
  'set_memory',
  'wait_for_email',
])

/** Query fields written by hand still, with the REST read each stands for: to be declared as operations. */
const HAND_WRITTEN_FIELDS: Record<string, string> = {
  emails: '/v1/emails',
  memories: '/v1/memories',
  memory: '/v1/memories/:key',
}

let openapiPaths: Record<string, Record<string, unknown>>
beforeAll(async () => {
  const t = await testApp()
  openapiPaths = (await t.request('GET', '/v1/openapi')).body.paths
})

const inOpenApi = (method: string, path: string) => openapiPaths[path.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()] !== undefined

describe('operations', () => {
  test('each has a unique name, a REST operation the OpenAPI document lists, and its path parameters declared', () => {
    const names = OPERATIONS.map(op => op.name)
    expect(new Set(names).size).toBe(names.length)
    for (const op of OPERATIONS) {
      expect({ op: op.name, listed: inOpenApi(op.method, op.path) }).toEqual({ op: op.name, listed: true })
      expect(pathParams(op.path).sort()).toEqual(Object.keys(op.params ?? {}).sort())
      if (op.graphql) expect(op.method).toBe('GET')
    }
  })

  test('every MCP tool is a REST operation of the OpenAPI document; the declared ones are made from their declarations', () => {
    const declared = new Map(OPERATIONS.filter(op => op.mcp !== false).map(op => [op.name, op]))
    for (const tool of TOOLS) {
      expect({ tool: tool.name, listed: inOpenApi(tool.rest.method, tool.rest.path) }).toEqual({ tool: tool.name, listed: true })
      const op = declared.get(tool.name)
      if (op) expect(tool.rest).toEqual({ method: op.method, path: op.path })
      else expect({ tool: tool.name, handWritten: HAND_WRITTEN_TOOLS.has(tool.name) }).toEqual({ tool: tool.name, handWritten: true })
    }
    // the list only shrinks: a tool declared since must leave it
    for (const name of HAND_WRITTEN_TOOLS) expect({ name, declared: declared.has(name) }).toEqual({ name, declared: false })
    expect([...declared.keys()].filter(name => !TOOLS.some(t => t.name === name))).toEqual([])
  })

  test('every GraphQL Query field is a REST read of the OpenAPI document; the declared ones are made from their declarations', () => {
    const query = graphqlSchema().getQueryType()!.getFields()
    const declared = new Map(OPERATIONS.filter(op => op.graphql).map(op => [op.graphql!.field, op]))
    for (const field of Object.values(query)) {
      if (field.name === 'apiVersion') continue
      const op = declared.get(field.name)
      const path = op?.path ?? HAND_WRITTEN_FIELDS[field.name]
      expect({ field: field.name, listed: path !== undefined && inOpenApi('GET', path) }).toEqual({ field: field.name, listed: true })
      if (!op) continue
      expect(String(field.type)).toBe(isList(op) ? `${op.graphql!.type}Connection` : op.graphql!.type)
      if (isList(op)) expect(field.args.map(a => a.name)).toEqual(expect.arrayContaining(['first', 'after']))
    }
    for (const name of Object.keys(HAND_WRITTEN_FIELDS)) expect({ name, declared: declared.has(name) }).toEqual({ name, declared: false })
  })
})
