/**
 * Address notes: authorship (member, function, connection), who may change which note (a
 * connection key only notes authored by its bound address, whichever connection of it wrote
 * them; the organization's credentials any), If-Match versions, and isolation across
 * organizations.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestApp, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'

let t: TestApp
let org: TestOrg
let bound: string
let sibling: string
let key: string
let siblingKey: string

async function connect(address: string): Promise<string> {
  const inv = expectOk(await t.request('POST', '/v1/agent-connections', { key: org.key, body: { address } }), 201)
  return expectOk(await t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code: inv.invitation_code } })).connection_key
}

const write = (credential: string, body: Record<string, unknown>) => t.request('POST', '/v1/address-notes', { key: credential, body })
const edit = (credential: string, id: string, body: string, ifMatch?: string) =>
  t.request('PATCH', `/v1/address-notes/${id}`, { key: credential, body: { body }, headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } })

beforeAll(async () => {
  t = await testApp()
  org = await createOrg()
  bound = await managedAddress(t.ctx, org.orgId)
  sibling = await managedAddress(t.ctx, org.orgId)
  key = await connect(bound)
  siblingKey = await connect(sibling)
})

describe('authorship', () => {
  test('a member, a function and a connection each write as themselves', async () => {
    const byMember = expectOk(await write(org.key, { address: 'Ada@Example.com', body: 'prefers short answers' }), 201)
    expect(byMember).toMatchObject({ address: 'ada@example.com', author: { kind: 'member', id: org.userId, address: null }, version: 1 })
    const byAgent = await write(key, { address: 'ada@example.com', body: 'asked about invoices' })
    expect(expectOk(byAgent, 201).author).toMatchObject({ kind: 'connection', address: bound })
    expect(byAgent.headers.get('etag')).toBe('"1"')
    const fn = expectOk(
      await t.request('POST', '/v1/functions', { key: org.key, body: { name: 'noter', code: `export default { fetch() { return new Response('') } }` } }),
      201,
    )
    const [row] = await (await testSql())<{ runtime_key_sealed: Buffer }[]>`select runtime_key_sealed from functions where id = ${fn.id}`
    const runtimeKey = t.ctx.keys.decrypt(row!.runtime_key_sealed)
    expect(expectOk(await write(runtimeKey, { address: 'ada@example.com', body: 'auto-replied' }), 201).author).toEqual({
      kind: 'function',
      id: fn.id,
      address: null,
    })
  })

  test('everyone in the organization reads every note, connection keys included; filter by address', async () => {
    const forAgent = expectOk(await t.request('GET', '/v1/address-notes?address=ADA@example.com', { key: siblingKey }))
    expect(forAgent.map((n: { author: { kind: string } }) => n.author.kind)).toEqual(['function', 'connection', 'member'])
    const one = await t.request('GET', `/v1/address-notes/${forAgent[0].id}`, { key })
    expect(expectOk(one).body).toBe('auto-replied')
    expect(one.headers.get('etag')).toBe('"1"')
  })

  test('bad input is a validation_error naming the field', async () => {
    expectError(await write(org.key, { address: 'nobody', body: 'x' }), 400, 'validation_error', /^address: /)
    expectError(await write(org.key, { address: 'a@example.com', body: '' }), 400, 'validation_error', /body/)
    expectError(await write(org.key, { address: 'a@example.com', body: 'x'.repeat(10_001) }), 400, 'validation_error', /body/)
  })
})

describe('who may change a note', () => {
  let memberNote: string
  let agentNote: string
  beforeAll(async () => {
    memberNote = expectOk(await write(org.key, { address: 'bob@example.com', body: 'member note' }), 201).id
    agentNote = expectOk(await write(key, { address: 'bob@example.com', body: 'agent note' }), 201).id
  })

  test('a connection key cannot edit or delete a note authored by a member or by another address (403)', async () => {
    expectError(await edit(key, memberNote, 'mine now', '"1"'), 403, 'forbidden', /authored by its own address/)
    expectError(await edit(siblingKey, agentNote, 'mine now', '"1"'), 403, 'forbidden')
    expectError(await t.request('DELETE', `/v1/address-notes/${agentNote}`, { key: siblingKey }), 403, 'forbidden')
    expect(expectOk(await t.request('GET', `/v1/address-notes/${agentNote}`, { key: org.key })).body).toBe('agent note')
  })

  test('the bound address edits its own note with If-Match; a stale or missing version is refused', async () => {
    expectError(await edit(key, agentNote, 'no version'), 400, 'validation_error', /^If-Match: /)
    expectError(await edit(key, agentNote, 'bad', 'soon'), 400, 'validation_error', /^If-Match: /)
    const edited = await edit(key, agentNote, 'agent note, revised', '"1"')
    expect(expectOk(edited)).toMatchObject({ body: 'agent note, revised', version: 2 })
    expect(edited.headers.get('etag')).toBe('"2"')
    const stale = await edit(key, agentNote, 'lost update', '"1"')
    expectError(stale, 412, 'precondition_failed')
    expect(stale.body.error.details.current_version).toBe(2)
  })

  test('a reconnected runtime (a new key for the same address) keeps its notes', async () => {
    const again = await connect(bound)
    expectError(await edit(key, agentNote, 'old key', '"2"'), 401, 'unauthorized')
    expect(expectOk(await edit(again, agentNote, 'new key', '"2"')).version).toBe(3)
    key = again
  })

  test("the organization's own credentials may change any note; delete honours If-Match", async () => {
    expect(expectOk(await edit(org.key, agentNote, 'moderated', '3')).version).toBe(4)
    expectError(await t.request('DELETE', `/v1/address-notes/${agentNote}`, { key, headers: { 'if-match': '"3"' } }), 412, 'precondition_failed')
    expectOk(await t.request('DELETE', `/v1/address-notes/${agentNote}`, { key, headers: { 'if-match': '"4"' } }))
    expectOk(await t.request('DELETE', `/v1/address-notes/${memberNote}`, { key: org.key }))
    expectError(await t.request('GET', `/v1/address-notes/${memberNote}`, { key: org.key }), 404, 'not_found')
  })
})

describe('isolation', () => {
  test('another organization sees no note and cannot change one (404)', async () => {
    const stranger = await createOrg()
    const note = expectOk(await write(org.key, { address: 'carol@example.com', body: 'private' }), 201)
    expect(expectOk(await t.request('GET', '/v1/address-notes?address=carol@example.com', { key: stranger.key }))).toEqual([])
    expectError(await t.request('GET', `/v1/address-notes/${note.id}`, { key: stranger.key }), 404, 'not_found')
    expectError(await edit(stranger.key, note.id, 'x', '"1"'), 404, 'not_found')
    expectError(await t.request('DELETE', `/v1/address-notes/${note.id}`, { key: stranger.key }), 404, 'not_found')
  })
})
