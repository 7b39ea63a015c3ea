/**
 * Each operation declared once (src/operations.ts): every MCP tool and every GraphQL Query field
 * is made from a declaration, and stands for a REST operation that the OpenAPI document lists. A
 * tool or field written by hand fails here: declare it as an operation.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { isList, pathParams } from '../src/http/operation'
import { OPERATIONS } from '../src/operations'
import { TOOLS } from '../src/mcp/server'
import { graphqlSchema } from '../src/graphql/schema'
import { testApp } from './helpers/app'

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

  test('every MCP tool is made from a declaration, and is a REST operation of the OpenAPI document', () => {
    const declared = new Map(OPERATIONS.filter(op => op.mcp !== false).map(op => [op.name, op]))
    for (const tool of TOOLS) {
      expect({ tool: tool.name, listed: inOpenApi(tool.rest.method, tool.rest.path) }).toEqual({ tool: tool.name, listed: true })
      const op = declared.get(tool.name)
      expect({ tool: tool.name, declared: op !== undefined }).toEqual({ tool: tool.name, declared: true })
      expect(tool.rest).toEqual({ method: op!.method, path: op!.path })
    }
    expect([...declared.keys()].filter(name => !TOOLS.some(t => t.name === name))).toEqual([])
  })

  test('every GraphQL Query field is made from a declaration, and is a REST read of the OpenAPI document', () => {
    const query = graphqlSchema().getQueryType()!.getFields()
    const declared = new Map(OPERATIONS.filter(op => op.graphql).map(op => [op.graphql!.field, op]))
    for (const field of Object.values(query)) {
      // the version of the surface itself, readable without a credential
      if (field.name === 'apiVersion') continue
      const op = declared.get(field.name)
      expect({ field: field.name, declared: op !== undefined }).toEqual({ field: field.name, declared: true })
      expect({ field: field.name, listed: inOpenApi('GET', op!.path) }).toEqual({ field: field.name, listed: true })
      expect(String(field.type)).toBe(isList(op!) ? `${op!.graphql!.type}Connection` : op!.graphql!.type)
      if (isList(op!)) expect(field.args.map(a => a.name)).toEqual(expect.arrayContaining(['first', 'after']))
    }
  })
})
