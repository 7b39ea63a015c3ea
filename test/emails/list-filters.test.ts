/**
 * GET /v1/emails by inbox and by address: received at it or sent from it, combined with the
 * other filters, described in the OpenAPI document, and cursors that continue only the list
 * (the same filters) they came from.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { memoryResolver } from '../../src/dns/resolver'
import { createOrg, testApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'

const { request } = await testApp({}, { resolver: memoryResolver({}) })

interface Listed {
  id: string
  direction: string
  subject: string
}

let org: TestOrg
let a: { id: string; address: string }
let b: { id: string; address: string }

const list = async (query: string, key = org.key) => expectOk(await request('GET', `/v1/emails?${query}`, { key })) as Listed[]
const subjects = (rows: Listed[]) => rows.map(r => r.subject)

beforeAll(async () => {
  org = await createOrg()
  a = expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: {} }), 201)
  b = expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: {} }), 201)
  // mail from another organization to each inbox (delivered through the local relay), then A answers
  const sender = await createOrg()
  const outside = expectOk(await request('POST', '/v1/inboxes', { key: sender.key, body: {} }), 201).address
  const send = (key: string, body: Record<string, unknown>) =>
    request('POST', '/v1/send-mail', { key, body: { body_text: 'x', ...body } }).then(r => expectOk(r))
  await send(sender.key, { from: outside, to: a.address, subject: 'to A 1' })
  await send(sender.key, { from: outside, to: b.address, subject: 'to B' })
  await send(sender.key, { from: outside, to: a.address, subject: 'to A 2' })
  await send(org.key, { from: a.address, to: 'someone@example.com', subject: 'from A' })
})

describe('GET /v1/emails filters', () => {
  test("inbox_id: the inbox's received and sent mail, nobody else's", async () => {
    expect(subjects(await list(`inbox_id=${a.id}`))).toEqual(['from A', 'to A 2', 'to A 1'])
    expect(subjects(await list(`inbox_id=${b.id}`))).toEqual(['to B'])
    expect(subjects(await list(`inbox_id=${a.id}&direction=inbound`))).toEqual(['to A 2', 'to A 1'])
  })

  test('address: the same by address, in any case; combined with inbox_id both must hold', async () => {
    expect(subjects(await list(`address=${encodeURIComponent(a.address.toUpperCase())}`))).toEqual(['from A', 'to A 2', 'to A 1'])
    expect(subjects(await list(`address=${b.address}&direction=outbound`))).toEqual([])
    expect(await list(`inbox_id=${a.id}&address=${b.address}`)).toEqual([])
    expect(subjects(await list(`address=nobody@example.com`))).toEqual([])
  })

  test("another organization's inbox is not_found; a malformed address or inbox id is a validation_error", async () => {
    expectError(await request('GET', `/v1/emails?inbox_id=${a.id}`, { key: (await createOrg()).key }), 404, 'not_found')
    expectError(await request('GET', '/v1/emails?address=not-an-address', { key: org.key }), 400, 'validation_error', /^address: /)
    expectError(await request('GET', '/v1/emails?inbox_id=nope', { key: org.key }), 400, 'validation_error', /^inbox_id: /)
  })

  test('a cursor continues the list of its filters and is refused with other filters', async () => {
    const first = await request('GET', `/v1/emails?inbox_id=${a.id}&limit=1`, { key: org.key })
    expect(subjects(expectOk(first))).toEqual(['from A'])
    const cursor = first.body.meta.cursor as string
    expect(cursor).toBeString()
    expect(subjects(await list(`inbox_id=${a.id}&limit=2&cursor=${cursor}`))).toEqual(['to A 2', 'to A 1'])
    for (const other of [`inbox_id=${b.id}`, '', `address=${a.address}`, `inbox_id=${a.id}&direction=inbound`]) {
      expectError(await request('GET', `/v1/emails?${other}&cursor=${cursor}`, { key: org.key }), 400, 'validation_error', /^cursor: /)
    }
  })

  test('the OpenAPI document describes both filters', async () => {
    const doc = (await request('GET', '/v1/openapi')).body
    const params = doc.paths['/v1/emails'].get.parameters as { name: string; in: string; description?: string; schema: { format?: string } }[]
    const byName = Object.fromEntries(params.map(p => [p.name, p]))
    expect(byName.inbox_id).toMatchObject({ in: 'query', schema: { format: 'uuid' } })
    expect(byName.inbox_id!.description ?? (byName.inbox_id!.schema as { description?: string }).description).toContain('inbox')
    expect(byName.address).toMatchObject({ in: 'query' })
    expect(byName.address!.description ?? (byName.address!.schema as { description?: string }).description).toContain('address')
  })
})
