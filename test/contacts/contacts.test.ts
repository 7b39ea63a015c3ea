/**
 * Contacts: create, upsert by address, list with search and tags, update, delete, isolation;
 * the counters after real mail (SMTP in through the listener, a real send out through a relay);
 * and the send grant of network admission as the reply-only gate honours it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { inboundHarness, managedAddress, type InboundHarness } from '../helpers/mail'
import { startTestRelay, type TestRelay } from '../helpers/relay'
import { relayOf } from '../../src/sending/relay'
import { unique } from '../helpers/identity'

let relay: TestRelay
let h: InboundHarness
let org: TestOrg
let mine: string
let other: string

beforeAll(async () => {
  relay = await startTestRelay()
  h = await inboundHarness({ SMTP_RELAY_URL: relay.url, RELAY_TIMEOUT_MS: '10000' })
  org = await createOrg()
  mine = await managedAddress(h.ctx, org.orgId)
  other = await managedAddress(h.ctx, org.orgId)
})
afterAll(async () => {
  await relayOf(h.ctx).close()
  await relay.stop()
  await h.stop()
})

const contacts = (query = '', key = org.key) => h.request('GET', `/v1/contacts${query}`, { key })

describe('managing contacts', () => {
  test('create, then 409 on the same pair; PUT upserts by address (201, then 200 keeping what it omits)', async () => {
    const created = expectOk(
      await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: 'Ada@Example.com', name: 'Ada', tags: ['vip'] } }),
      201,
    )
    expect(created).toMatchObject({
      owner_address: mine,
      address: 'ada@example.com',
      name: 'Ada',
      tags: ['vip'],
      source: 'manual',
      send_grant: 'none',
      messages_received: 0,
      messages_sent: 0,
      first_seen_at: null,
    })
    const again = await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: 'ada@example.com' } })
    expectError(again, 409, 'conflict')
    expect(again.body.error.details.reason).toBe('contact_exists')
    const updated = expectOk(
      await h.request('PUT', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: 'ada@example.com', tags: ['vip', 'billing'] } }),
    )
    expect(updated).toMatchObject({ id: created.id, name: 'Ada', tags: ['vip', 'billing'] })
    const fresh = expectOk(
      await h.request('PUT', '/v1/contacts', { key: org.key, body: { owner_address: other, address: 'ada@example.com', name: 'Ada (other inbox)' } }),
      201,
    )
    expect(fresh.id).not.toBe(created.id)
  })

  test('bad input: the owner must be an address of the organization, the address an address, tags bounded', async () => {
    expectError(
      await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: 'someone@elsewhere.example', address: 'x@example.com' } }),
      400,
      'validation_error',
      /^owner_address: /,
    )
    expectError(
      await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: 'not an address' } }),
      400,
      'validation_error',
      /^address: /,
    )
    expectError(
      await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: 'x@example.com', tags: ['a,b'] } }),
      400,
      'validation_error',
      /tags/,
    )
    expectError(
      await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: 'x@example.com', extra: 1 } }),
      400,
      'validation_error',
    )
  })

  test('list: by owner, search on address and name, by tag; pages', async () => {
    expectOk(
      await h.request('POST', '/v1/contacts', {
        key: org.key,
        body: { owner_address: mine, address: 'grace@navy.example', name: 'Grace Hopper', tags: ['billing'] },
      }),
      201,
    )
    const byOwner = expectOk(await contacts(`?owner_address=${mine}`))
    expect(byOwner.map((c: { address: string }) => c.address)).toEqual(['grace@navy.example', 'ada@example.com'])
    expect(expectOk(await contacts(`?q=hopper`)).map((c: { address: string }) => c.address)).toEqual(['grace@navy.example'])
    expect(expectOk(await contacts(`?q=NAVY`)).map((c: { address: string }) => c.address)).toEqual(['grace@navy.example'])
    expect(expectOk(await contacts(`?tag=vip`)).map((c: { owner_address: string }) => c.owner_address)).toEqual([mine])
    expect(expectOk(await contacts(`?tag=billing&owner_address=${mine}`))).toHaveLength(2)
    expect(expectOk(await contacts(`?q=%25`))).toEqual([])
    const first = await contacts('?limit=2')
    expect(first.body.meta).toMatchObject({ total: 3, limit: 2 })
    const rest = await contacts(`?limit=2&cursor=${first.body.meta.cursor}`)
    expect(rest.body.data).toHaveLength(1)
    expect(rest.body.meta.cursor).toBeNull()
  })

  test('update and delete', async () => {
    const [grace] = expectOk(await contacts('?q=grace'))
    const renamed = expectOk(await h.request('PATCH', `/v1/contacts/${grace.id}`, { key: org.key, body: { name: null, tags: [] } }))
    expect(renamed).toMatchObject({ name: null, tags: [] })
    expectError(await h.request('PATCH', `/v1/contacts/${grace.id}`, { key: org.key, body: {} }), 400, 'validation_error')
    expect(expectOk(await h.request('DELETE', `/v1/contacts/${grace.id}`, { key: org.key }))).toEqual({ id: grace.id, deleted: true })
    expectError(await h.request('GET', `/v1/contacts/${grace.id}`, { key: org.key }), 404, 'not_found')
  })

  test('another organization sees none of them (404, empty list)', async () => {
    const stranger = await createOrg()
    const [ada] = expectOk(await contacts(`?q=ada&owner_address=${mine}`))
    expect(expectOk(await contacts('', stranger.key))).toEqual([])
    expectError(await h.request('GET', `/v1/contacts/${ada.id}`, { key: stranger.key }), 404, 'not_found')
    expectError(await h.request('PATCH', `/v1/contacts/${ada.id}`, { key: stranger.key, body: { name: 'x' } }), 404, 'not_found')
    expectError(await h.request('DELETE', `/v1/contacts/${ada.id}`, { key: stranger.key }), 404, 'not_found')
    // nor can it file a contact under this organization's address
    expectError(
      await h.request('POST', '/v1/contacts', { key: stranger.key, body: { owner_address: mine, address: 'x@example.com' } }),
      400,
      'validation_error',
      /^owner_address: /,
    )
  })
})

describe('counters from real mail', () => {
  test('SMTP mail in and a send out move the contact of the two addresses, and only it', async () => {
    const peer = `peer-${unique()}@sender.example`
    const before = expectOk(await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: peer } }), 201)
    const bystander = expectOk(await h.request('POST', '/v1/contacts', { key: org.key, body: { owner_address: other, address: peer } }), 201)
    expect(before.first_seen_at).toBeNull()
    await h.transport.sendMail({ from: `Peer <${peer}>`, to: mine, subject: 'one', text: 'x' })
    await h.transport.sendMail({ from: peer, to: mine, subject: 'two', text: 'x' })
    const res = await h.request('POST', '/v1/send-mail', {
      key: org.key,
      body: { from: mine, to: peer, cc: ['someone@example.com'], subject: `re ${unique()}`, body_text: 'hello' },
    })
    expect(res.status).toBe(200)
    const after = expectOk(await h.request('GET', `/v1/contacts/${before.id}`, { key: org.key }))
    expect(after).toMatchObject({ messages_received: 2, messages_sent: 1 })
    expect(Date.parse(after.first_seen_at)).toBeLessThanOrEqual(Date.parse(after.last_contacted_at))
    expect(Date.parse(after.last_contacted_at)).toBeGreaterThanOrEqual(Date.parse(before.created_at))
    const untouched = expectOk(await h.request('GET', `/v1/contacts/${bystander.id}`, { key: org.key }))
    expect(untouched).toMatchObject({ messages_received: 0, messages_sent: 0, first_seen_at: null, last_contacted_at: null })
  })

  test('a contact created later starts from the mail already stored between the two addresses', async () => {
    const peer = `late-${unique()}@sender.example`
    await h.transport.sendMail({ from: peer, to: [mine, other], subject: 'early', text: 'x' })
    const created = expectOk(await h.request('PUT', '/v1/contacts', { key: org.key, body: { owner_address: mine, address: peer } }), 201)
    expect(created).toMatchObject({ messages_received: 1, messages_sent: 0 })
    expect(created.first_seen_at).not.toBeNull()
    expect(created.first_seen_at).toBe(created.last_contacted_at)
  })
})
