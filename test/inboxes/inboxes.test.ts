/** Managed inboxes: create (local part rules, reserved and taken addresses), list, read, delete. */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { RESERVED_LOCAL_PARTS } from '../../src/inboxes/service'
import { managedInboxOwner } from '../../src/mail/inbox-queries'

const { ctx, request } = await testApp()
const DOMAIN = 'agents.test.local'
const unique = (label = 'bot') => `${label}-${crypto.randomUUID().slice(0, 8)}`

describe('create', () => {
  test('201 with the chosen local part, lowercased, and a display name', async () => {
    const org = await createOrg()
    const local = unique('Sales.Bot')
    const res = await request('POST', '/v1/inboxes', { key: org.key, body: { local_part: local, display_name: '  Sales Bot ' } })
    const inbox = expectOk(res, 201)
    expect(inbox).toEqual({ id: expect.any(String), address: `${local.toLowerCase()}@${DOMAIN}`, display_name: 'Sales Bot', created_at: expect.any(String) })
    expect(Math.abs(Date.parse(inbox.created_at) - Date.now())).toBeLessThan(60_000)
    expect(await managedInboxOwner(ctx.sql, inbox.address.toUpperCase())).toEqual({ orgId: org.orgId, inboxId: inbox.id })
  })

  test('without a local part: a random address and no display name', async () => {
    const org = await createOrg()
    const a = expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: {} }), 201)
    const b = expectOk(await request('POST', '/v1/inboxes', { key: org.key }), 201)
    for (const inbox of [a, b]) expect(inbox.address).toMatch(new RegExp(`^agent-[a-z2-9]{10}@${DOMAIN.replace(/\./g, '\\.')}$`))
    expect(a.address).not.toBe(b.address)
    expect(a.display_name).toBeNull()
    expectError(await request('POST', '/v1/inboxes', { key: org.key, body: ['x'] }), 400, 'validation_error', /^body: /)
  })

  test('an address already taken, in this or another organization, is 409 conflict', async () => {
    const org = await createOrg()
    const local = unique()
    expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: { local_part: local } }), 201)
    expectError(
      await request('POST', '/v1/inboxes', { key: org.key, body: { local_part: local.toUpperCase() } }),
      409,
      'conflict',
      `local_part: ${local}@${DOMAIN} is taken`,
    )
    expectError(await request('POST', '/v1/inboxes', { key: (await createOrg()).key, body: { local_part: local } }), 409, 'conflict')
  })

  test('reserved role names are refused in any case', async () => {
    const org = await createOrg()
    for (const local of ['postmaster', 'Abuse', 'admin', 'root', 'noreply', 'no-reply', 'MAILER-DAEMON', 'hostmaster', 'webmaster', 'security']) {
      expect(RESERVED_LOCAL_PARTS.has(local.toLowerCase())).toBe(true)
      expectError(
        await request('POST', '/v1/inboxes', { key: org.key, body: { local_part: local } }),
        400,
        'validation_error',
        `local_part: ${local.toLowerCase()} is reserved`,
      )
    }
    expect(await managedInboxOwner(ctx.sql, `postmaster@${DOMAIN}`)).toBeNull()
  })

  test('malformed local parts and display names are validation errors naming the field', async () => {
    const org = await createOrg()
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ local_part: '-bot' }, /^local_part: must start with a letter or digit/],
      [{ local_part: '.bot' }, /^local_part: must start with a letter or digit/],
      [{ local_part: 'my bot' }, /^local_part: must start/],
      [{ local_part: 'bot+tag' }, /^local_part: must start/],
      [{ local_part: 'bot@example.com' }, /^local_part: must start/],
      [{ local_part: 'bøt' }, /^local_part: must start/],
      [{ local_part: 'a..b' }, /^local_part: must not end with a dot or contain two dots/],
      [{ local_part: 'bot.' }, /^local_part: must not end with a dot/],
      [{ local_part: '' }, /^local_part: must not be empty$/],
      [{ local_part: 'a'.repeat(64) }, /^local_part: must be at most 63 characters$/],
      [{ local_part: 7 }, /^local_part: must be a string$/],
      [{ display_name: 'Bot\r\nBcc: victim@example.com' }, /^display_name: must not contain control characters/],
      [{ display_name: '   ' }, /^display_name: must not be empty$/],
      [{ display_name: 'x'.repeat(101) }, /^display_name: must be at most 100 characters$/],
      [{ address: 'x@agents.test.local' }, /^address: is not a known field$/],
    ]
    for (const [body, message] of cases) {
      const res = await request('POST', '/v1/inboxes', { key: org.key, body })
      expectError(res, 400, 'validation_error')
      expect([body, res.body.error.message]).toEqual([body, expect.stringMatching(message)])
    }
    expect((await request('GET', '/v1/inboxes', { key: org.key })).body.meta.total).toBe(0)
  })

  test('the longest local part (63 characters) is accepted', async () => {
    const org = await createOrg()
    const local = `${unique('x')}${'y'.repeat(63)}`.slice(0, 63)
    expect(expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: { local_part: local } }), 201).address).toBe(`${local}@${DOMAIN}`)
  })

  test('without credentials: 401', async () => {
    expectError(await request('POST', '/v1/inboxes', { body: {} }), 401, 'unauthorized')
  })
})

describe('read, list, delete', () => {
  test("GET one; another organization's inbox is 404 not_found", async () => {
    const org = await createOrg()
    const inbox = expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: { display_name: 'Bot' } }), 201)
    expect(expectOk(await request('GET', `/v1/inboxes/${inbox.id}`, { key: org.key }))).toEqual(inbox)
    expectError(await request('GET', `/v1/inboxes/${inbox.id}`, { key: (await createOrg()).key }), 404, 'not_found', 'inbox: not found')
    expectError(await request('GET', `/v1/inboxes/${crypto.randomUUID()}`, { key: org.key }), 404, 'not_found')
    expectError(await request('GET', '/v1/inboxes/nope', { key: org.key }), 400, 'validation_error', /^id: /)
  })

  test("the list pages newest first over the organization's inboxes only", async () => {
    const org = await createOrg()
    const other = await createOrg()
    await request('POST', '/v1/inboxes', { key: other.key, body: {} })
    const made: string[] = []
    for (let i = 0; i < 3; i++) made.push(expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: {} }), 201).id)
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await request('GET', `/v1/inboxes?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: org.key })
      seen.push(...expectOk(res).map((i: { id: string }) => i.id))
      expect(res.body.meta).toMatchObject({ total: 3, limit: 2 })
      cursor = res.body.meta.cursor
      pages++
    } while (cursor)
    expect(pages).toBe(2)
    expect(seen).toEqual(made.reverse())
    const theirs = (await request('GET', '/v1/inboxes?limit=1', { key: org.key })).body.meta.cursor
    expectError(await request('GET', `/v1/inboxes?cursor=${encodeURIComponent(theirs)}`, { key: other.key }), 400, 'validation_error', /^cursor: /)
  })

  test('DELETE: 200 {id, deleted: true}; the address then receives nothing and can be taken again', async () => {
    const org = await createOrg()
    const local = unique()
    const inbox = expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: { local_part: local } }), 201)
    expectError(await request('DELETE', `/v1/inboxes/${inbox.id}`, { key: (await createOrg()).key }), 404, 'not_found')
    expect(await managedInboxOwner(ctx.sql, inbox.address)).not.toBeNull()

    expect(expectOk(await request('DELETE', `/v1/inboxes/${inbox.id}`, { key: org.key }))).toEqual({ id: inbox.id, deleted: true })
    expect(await managedInboxOwner(ctx.sql, inbox.address)).toBeNull()
    expectError(await request('GET', `/v1/inboxes/${inbox.id}`, { key: org.key }), 404, 'not_found')
    expectError(await request('DELETE', `/v1/inboxes/${inbox.id}`, { key: org.key }), 404, 'not_found')
    expectOk(await request('POST', '/v1/inboxes', { key: org.key, body: { local_part: local } }), 201)
  })
})
