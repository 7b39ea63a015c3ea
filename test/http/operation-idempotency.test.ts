/**
 * The declaration options of idempotent writes (http/operation.ts), on declarations of their own:
 * `idempotency` (REST's optional Idempotency-Key header, MCP's required idempotency_key, the
 * handler's `call.idempotencyKey`), `rest: false` (an MCP tool of a REST operation another
 * declaration serves) and the tool's own arguments (`mcp.input` and `mcp.args`).
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { Elysia, t } from 'elysia'
import { operation, type OperationCall } from '../../src/http/operation'
import { operationRoutes } from '../../src/http/operation-routes'
import { operationTools } from '../../src/mcp/operation-tools'
import { createOrg, testApp, type TestApp, type TestOrg } from '../helpers/app'
import { expectError } from '../helpers/envelope'

const Seen = t.Object({ key: t.Union([t.String(), t.Null()]), args: t.Record(t.String(), t.Unknown()) })
const seen = async (call: OperationCall, args: Record<string, unknown>) => ({ key: call.idempotencyKey ?? null, args })
const KEY_DOC = 'required: a retry with the same key answers the first'

const write = operation({
  name: 'write_thing',
  method: 'POST',
  path: '/v1/test/things',
  tag: 'Test',
  summary: 'Write a thing',
  input: t.Object({ name: t.String(), note: t.Optional(t.String()) }),
  idempotency: { key: KEY_DOC },
  mcp: { input: ['name'] },
  output: Seen,
  handle: seen,
})
const compose = operation({
  name: 'compose_thing',
  method: 'POST',
  path: '/v1/test/things',
  rest: false,
  tag: 'Test',
  summary: 'Compose a thing',
  input: t.Object({ from: t.String() }),
  idempotency: { key: KEY_DOC },
  output: Seen,
  handle: (call, { from }) => seen(call, { name: `from ${from}` }),
})

let app: TestApp
let org: TestOrg
beforeAll(async () => {
  app = await testApp()
  org = await createOrg()
})

describe('REST', () => {
  const routes = () => new Elysia().use(operationRoutes(app.ctx, [write, compose]))
  const post = (headers: Record<string, string> = {}) =>
    routes().handle(
      new Request('http://api.test.local/v1/test/things', {
        method: 'POST',
        headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ name: 'a' }),
      }),
    )

  test('rest: false serves no route: the declaration of the route answers at its path', async () => {
    // (Elysia would let the later declaration of the same method and path take the route over)
    const res = await post()
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ key: null, args: { name: 'a' } })
  })

  test('the Idempotency-Key header is the handler’s idempotencyKey', async () => {
    expect(await (await post({ 'idempotency-key': 'k-1' })).json()).toEqual({ key: 'k-1', args: { name: 'a' } })
  })

  test('a malformed Idempotency-Key is 400 validation_error (POST /v1/send-mail)', async () => {
    const res = await app.request('POST', '/v1/send-mail', {
      key: org.key,
      body: { from: 'a@example.com', to: 'b@example.com', subject: 's', body_text: 'b' },
      headers: { 'idempotency-key': 'k'.repeat(256) },
    })
    expectError(res, 400, 'validation_error')
    expect(res.body.error.message).toBe('Idempotency-Key: must be 1 to 255 characters')
  })
})

describe('MCP', () => {
  const [composeTool, writeTool] = operationTools([compose, write])
  const call = { ctx: undefined, auth: undefined, signal: new AbortController().signal } as never

  test('a tool requires idempotency_key, after its own arguments (mcp.input where declared)', () => {
    expect(Object.keys(writeTool!.input.properties)).toEqual(['name', 'idempotency_key'])
    expect(writeTool!.input.required).toEqual(['name', 'idempotency_key'])
    expect(writeTool!.input.properties.idempotency_key).toMatchObject({ type: 'string', minLength: 1, maxLength: 255, description: KEY_DOC })
    expect(Object.keys(composeTool!.input.properties)).toEqual(['from', 'idempotency_key'])
  })

  test('a tool of rest: false stands for the REST operation at its method and path', () => {
    expect(composeTool!.rest).toEqual({ method: 'POST', path: '/v1/test/things' })
  })

  test('the idempotency_key argument is the handler’s idempotencyKey, not one of its arguments', async () => {
    expect(await writeTool!.handle(call, { name: 'a', idempotency_key: 'k-2' })).toEqual({ key: 'k-2', args: { name: 'a' } })
    expect(await composeTool!.handle(call, { from: 'b', idempotency_key: 'k-3' })).toEqual({ key: 'k-3', args: { name: 'from b' } })
  })
})
