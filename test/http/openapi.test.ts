/** The OpenAPI document: a valid OpenAPI 3.1 description of every route the app serves. */
import { describe, expect, test } from 'bun:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import { testApp } from '../helpers/app'
import { ERROR_STATUS } from '../../src/errors'

const { app, request } = await testApp()
const res = await request('GET', '/v1/openapi')
const doc = res.body

type Op = { operationId: string; security?: unknown[]; parameters?: { name: string; in: string }[]; responses: Record<string, unknown>; deprecated?: boolean }
const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, Op>>).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })))

describe('GET /v1/openapi', () => {
  test('served publicly as a bare JSON document', () => {
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('application/json')
    expect(doc.success).toBeUndefined()
  })

  test('OpenAPI 3.1.0, valid according to swagger-parser', async () => {
    expect(doc.openapi).toBe('3.1.0')
    await SwaggerParser.validate(structuredClone(doc))
  })

  test('covers every route the app serves', () => {
    const documented = new Set(operations().map(o => `${o.method.toUpperCase()} ${o.path}`))
    // routes for every method (ALL: /mcp, a protocol endpoint of its own) are not REST operations, nor are hidden pages (/docs)
    const served = (app.routes as { method: string; path: string; hooks: { detail?: { hide?: boolean } } }[])
      .filter(r => r.method !== 'ALL' && !r.hooks.detail?.hide)
      .map(r => {
        const path = r.path.replace(/:(\w+)/g, '{$1}').replace(/\/$/, '') || '/'
        return `${r.method} ${path}`
      })
    expect(served.length).toBeGreaterThanOrEqual(15)
    for (const route of served) expect(documented).toContain(route)
    expect(documented.size).toBe(new Set(served).size)
  })

  test('operation ids are unique; path parameters are declared', () => {
    const ids = operations().map(o => o.op.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const { path, op } of operations()) {
      for (const name of path.match(/\{(\w+)\}/g) ?? []) {
        expect(op.parameters?.some(p => p.in === 'path' && `{${p.name}}` === name)).toBe(true)
      }
    }
  })

  test('bearer security by default; authenticated operations document 401', () => {
    expect(doc.security).toEqual([{ bearer: [] }])
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    for (const { op } of operations()) {
      const isPublic = Array.isArray(op.security) && op.security.length === 0
      expect(Boolean(op.responses['401'])).toBe(!isPublic)
      expect(op.responses['429']).toBeDefined()
    }
  })

  test('query coercions are folded back into plain types', () => {
    const list = doc.paths['/v1/api-keys'].get
    const limit = list.parameters.find((p: { name: string }) => p.name === 'limit')
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 })
    expect(JSON.stringify(doc)).not.toContain('"format":"numeric"')
  })

  test('documents the error envelope, its code one of the closed list (so generated clients type it)', () => {
    const code = doc.components.schemas.Error.properties.error.properties.code
    expect(code.anyOf.map((c: { const: string }) => c.const)).toEqual(Object.keys(ERROR_STATUS))
    expect(code.anyOf.every((c: { type: string }) => c.type === 'string')).toBe(true)
    expect(doc.info.description).toContain('validation_error (400)')
  })
})
