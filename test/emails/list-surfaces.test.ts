/**
 * The list of mail on each surface (emails/operations.ts list_emails): REST looks an inbox up
 * before it reads the cursor; the GraphQL field emails checks and trims its address; the MCP tool
 * list_emails takes direction, thread_id and since only, never the long-poll or REST's other filters.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Client } from '@modelcontextprotocol/client'
import { memoryResolver } from '../../src/dns/resolver'
import { createOrg, testApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { gql, gqlData } from '../graphql/helpers'
import { mcpClient } from '../mcp/helpers'

const t = await testApp({}, { resolver: memoryResolver({}) })
const { request } = t

let org: TestOrg
let a: { id: string; address: string }
let b: { id: string; address: string }
let client: Client

beforeAll(async () => {
  org = await createOrg()
  a = expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: {} }), 201)
  b = expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: {} }), 201)
  const sender = await createOrg()
  const outside = expectOk(await request('POST', '/v1/inboxes', { key: sender.key, body: {} }), 201).address
  const send = (to: string, subject: string) =>
    request('POST', '/v1/send-mail', { key: sender.key, body: { from: outside, to, subject, body_text: 'x' } }).then(r => expectOk(r))
  await send(a.address, 'to A')
  await send(b.address, 'to B')
  client = await mcpClient(t, org.key, 'modern')
})
afterAll(async () => {
  await client.close()
})

const subjects = (rows: { subject: string }[]) => rows.map(r => r.subject).sort()

describe('GET /v1/emails on each surface', () => {
  test("REST: another organization's inbox is not_found before a cursor is read", async () => {
    const other = await createOrg()
    expectError(await request('GET', `/v1/emails?inbox_id=${a.id}&cursor=not-a-cursor`, { key: other.key }), 404, 'not_found')
    expectError(await request('GET', '/v1/emails?cursor=not-a-cursor', { key: other.key }), 400, 'validation_error', /^cursor: /)
  })

  test('GraphQL: the address is trimmed and compared in any case; one that is not an address is a validation_error', async () => {
    const spaced = JSON.stringify(`  ${a.address.toUpperCase()} `)
    const data = await gqlData(t, `{ emails(address: ${spaced}) { totalCount nodes { subject } } }`, { key: org.key })
    expect(subjects(data.emails.nodes)).toEqual(['to A'])
    const res = await gql(t, '{ emails(address: "not an address") { totalCount } }', { key: org.key })
    expect(res.body.errors[0].extensions.code).toBe('validation_error')
    expect(res.body.errors[0].message).toBe('address: must be an email address')
  })

  test("MCP: list_emails ignores REST's other filters and never waits", async () => {
    const started = Date.now()
    const result = (await client.callTool({
      name: 'list_emails',
      arguments: { direction: 'inbound', inbox_id: b.id, address: b.address, event_type: 'email.sent', wait: 30, since: '2000-01-01T00:00:00Z' },
    })) as { isError?: boolean; structuredContent: { items: { subject: string }[] } }
    expect(result.isError).toBeFalsy()
    expect(subjects(result.structuredContent.items)).toEqual(['to A', 'to B'])
    const none = (await client.callTool({
      name: 'list_emails',
      arguments: { thread_id: crypto.randomUUID(), wait: 30 },
    })) as { structuredContent: { items: unknown[] } }
    expect(none.structuredContent.items).toEqual([])
    expect(Date.now() - started).toBeLessThan(10_000)
  })
})
