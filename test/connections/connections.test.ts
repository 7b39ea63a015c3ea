/**
 * Agent connections: who may invite (owner or admin, by their current role; OAuth tokens and API
 * keys alike), which addresses, the one-time claim, reconnecting (the previous key is revoked),
 * disconnecting, and the public setup guide.
 */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql, type TestOrg } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { managedAddress } from '../helpers/mail'
import { person } from '../oauth/helpers'
import { markDomainVerified } from '../../src/domains/service'
import { addMember } from '../../src/account/membership-queries'
import { ensureUser } from '../../src/account/user-queries'
import { createApiKey } from '../../src/auth/api-keys'
import { loginTokens, newEmail, unique } from '../helpers/identity'

const t = await testApp()
const sql = await testSql()

const invite = (key: string, body: Record<string, unknown>) => t.request('POST', '/v1/agent-connections', { key, body })
const claim = (invitation_code: string, headers: Record<string, string> = {}, ip?: string) =>
  t.request('POST', '/v1/agent-connections/claim', { body: { invitation_code }, headers, ip })
const disconnect = (key: string, address: string) => t.request('DELETE', `/v1/agent-connections/${encodeURIComponent(address)}`, { key })

async function orgWithInbox(role: 'owner' | 'admin' | 'member' = 'owner') {
  const org = await createOrg({ role })
  return { org, address: await managedAddress(t.ctx, org.orgId) }
}

/** An invitation by the owner's key, claimed: the connection key. */
async function connected(org: TestOrg, address: string) {
  const inv = expectOk(await invite(org.key, { address }), 201)
  return expectOk(await claim(inv.invitation_code))
}

describe('POST /v1/agent-connections (invite)', () => {
  test('an owner API key: 201 with a one-time invitation code, expiry and setup URL; no-store; the code stored hashed', async () => {
    const { org, address } = await orgWithInbox()
    const res = await invite(org.key, { address: address.toUpperCase(), label: 'support bot' })
    const inv = expectOk(res, 201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(inv).toEqual({
      id: expect.any(String),
      address,
      label: 'support bot',
      invitation_code: expect.stringMatching(/^inv_[A-Za-z0-9_-]{43}$/),
      expires_at: expect.any(String),
      setup_url: 'http://api.test.local/v1/agent-connections/setup',
    })
    const hours = (Date.parse(inv.expires_at) - Date.now()) / 3_600_000
    expect(hours).toBeGreaterThan(23.9)
    expect(hours).toBeLessThanOrEqual(24)
    const [row] = await sql`select * from agent_connections where id = ${inv.id}`
    expect(JSON.stringify(row)).not.toContain(inv.invitation_code.slice(4))
  })

  test('an admin API key may invite; a member API key is 403 forbidden', async () => {
    const admin = await orgWithInbox('admin')
    expectOk(await invite(admin.org.key, { address: admin.address }), 201)
    const member = await orgWithInbox('member')
    expectError(await invite(member.org.key, { address: member.address }), 403, 'forbidden')
  })

  test("an API key reads its creator's current role: demoted to member, the key is refused at once", async () => {
    const { org, address } = await orgWithInbox('owner')
    expectOk(await invite(org.key, { address }), 201)
    await sql`update memberships set role = 'member' where org_id = ${org.orgId} and user_id = ${org.userId}`
    expectError(await invite(org.key, { address }), 403, 'forbidden')
  })

  test('a key created without a person (zero-touch agent account): 403 forbidden', async () => {
    const account = expectOk(await t.request('POST', '/v1/agent/accounts', { body: { terms_accepted: true } }), 201)
    expectError(await invite(account.api_key, { address: account.inbox.address }), 403, 'forbidden', /created without a person/)
  })

  test("OAuth tokens act with the person's current role: owner and admin may, member is 403, a demoted owner at once", async () => {
    const owner = await person('owner')
    const address = await managedAddress(t.ctx, owner.orgId)
    const ownerTokens = await loginTokens(t, owner)
    const inv = expectOk(await invite(ownerTokens.access_token, { address }), 201)
    const [row] = await sql`select created_by, setup_owner_address from agent_connections where id = ${inv.id}`
    expect(row).toEqual({ created_by: owner.userId, setup_owner_address: owner.email })

    const admin = await person('admin')
    expectOk(await invite((await loginTokens(t, admin)).access_token, { address: await managedAddress(t.ctx, admin.orgId) }), 201)

    const member = await person('member')
    const memberTokens = await loginTokens(t, member)
    expectError(await invite(memberTokens.access_token, { address: await managedAddress(t.ctx, member.orgId) }), 403, 'forbidden')
    expectError(await disconnect(memberTokens.access_token, address), 403, 'forbidden')

    await sql`update memberships set role = 'member' where org_id = ${owner.orgId} and user_id = ${owner.userId}`
    expectError(await invite(ownerTokens.access_token, { address }), 403, 'forbidden')
  })

  test('the address must be a managed inbox of the organization or at one of its verified domains', async () => {
    const { org } = await orgWithInbox()
    const other = await orgWithInbox()
    const domain = `conn-${unique()}.example`
    await markDomainVerified(sql, t.ctx.keys, t.ctx.config.MANAGED_DOMAIN, org.orgId, domain)
    expectOk(await invite(org.key, { address: `anyone@${domain}` }), 201)
    const pending = `pending-${unique()}.example`
    await sql`insert into domains (id, org_id, name, verification_token, dkim_selector, dkim_private_sealed, dkim_public)
              values (${crypto.randomUUID()}, ${org.orgId}, ${pending}, 'x', 'sel', '\\x00', 'x')`
    for (const address of [other.address, `nobody-${unique()}@agents.test.local`, `x@${pending}`, `x@sub.${domain}`, 'not-an-address']) {
      expectError(await invite(org.key, { address }), 400, 'validation_error', /^address: must be a managed inbox of this organization/)
    }
    expectError(await invite(org.key, {}), 400, 'validation_error', /^address: is required/)
  })

  test('without a credential: 401', async () => {
    expectError(await t.request('POST', '/v1/agent-connections', { body: { address: 'a@b.c' } }), 401, 'unauthorized')
  })
})

describe('POST /v1/agent-connections/claim', () => {
  test("200 once: a conn_ key for the address and the inviting person's address; no-store; stored hashed", async () => {
    const { org, address } = await orgWithInbox()
    const inv = expectOk(await invite(org.key, { address }), 201)
    const res = await claim(inv.invitation_code)
    const claimed = expectOk(res)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const [owner] = await sql`select email from users where id = ${org.userId}`
    expect(claimed).toEqual({
      connection_id: inv.id,
      connection_key: expect.stringMatching(/^conn_[A-Za-z0-9_-]{43}$/),
      address,
      setup_owner_address: owner!.email,
    })
    const [row] = await sql`select * from agent_connections where id = ${inv.id}`
    expect(JSON.stringify(row)).not.toContain(claimed.connection_key.slice(5))
    // the key works (mail reads) and acts for its address
    expectOk(await t.request('GET', '/v1/emails', { key: claimed.connection_key }))

    const again = await claim(inv.invitation_code)
    expectError(again, 409, 'conflict', /already claimed/)
    expect(again.body.error.details).toEqual({ reason: 'invitation_claimed' })
  })

  test('unknown, expired or withdrawn invitations: 404', async () => {
    expectError(await claim('inv_unknown'), 404, 'not_found')
    const { org, address } = await orgWithInbox()
    const expired = expectOk(await invite(org.key, { address }), 201)
    await sql`update agent_connections set invitation_expires_at = now() - interval '1 second' where id = ${expired.id}`
    expectError(await claim(expired.invitation_code), 404, 'not_found')
    const withdrawn = expectOk(await invite(org.key, { address }), 201)
    expectOk(await disconnect(org.key, address))
    expectError(await claim(withdrawn.invitation_code), 404, 'not_found')
  })

  test('Idempotency-Key: a lost answer can be fetched again from the same address, not from another', async () => {
    const { org, address } = await orgWithInbox()
    const inv = expectOk(await invite(org.key, { address }), 201)
    const key = `claim-${unique()}`
    const first = expectOk(await claim(inv.invitation_code, { 'idempotency-key': key }))
    const again = await claim(inv.invitation_code, { 'idempotency-key': key })
    expect(expectOk(again)).toEqual(first)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expectError(await claim(inv.invitation_code, { 'idempotency-key': key }, '192.0.2.9'), 409, 'conflict')
  })

  test('reconnecting keeps the address and revokes the previous key', async () => {
    const { org, address } = await orgWithInbox()
    const first = await connected(org, address)
    expectOk(await t.request('GET', '/v1/emails', { key: first.connection_key }))
    // an open invitation changes nothing until it is claimed
    const inv = expectOk(await invite(org.key, { address }), 201)
    expectOk(await t.request('GET', '/v1/emails', { key: first.connection_key }))
    const second = expectOk(await claim(inv.invitation_code))
    expect(second.address).toBe(first.address)
    expect(second.connection_key).not.toBe(first.connection_key)
    expectError(await t.request('GET', '/v1/emails', { key: first.connection_key }), 401, 'unauthorized')
    expectOk(await t.request('GET', '/v1/emails', { key: second.connection_key }))
    const [old] = await sql`select revoked_reason from agent_connections where id = ${first.connection_id}`
    expect(old!.revoked_reason).toBe('reconnected')
  })

  test('connections of other addresses are not touched by a reconnect', async () => {
    const { org, address } = await orgWithInbox()
    const otherAddress = await managedAddress(t.ctx, org.orgId)
    const other = await connected(org, otherAddress)
    await connected(org, address)
    await connected(org, address)
    expectOk(await t.request('GET', '/v1/emails', { key: other.connection_key }))
  })
})

describe('DELETE /v1/agent-connections/{address}', () => {
  test('a connection key disconnects its own address: 200, then the key is 401', async () => {
    const { org, address } = await orgWithInbox()
    const c = await connected(org, address)
    const res = await disconnect(c.connection_key, address.toUpperCase())
    expect(expectOk(res)).toMatchObject({ address, revoked: [c.connection_id] })
    expectError(await t.request('GET', '/v1/emails', { key: c.connection_key }), 401, 'unauthorized')
  })

  test('a connection key may not disconnect another address, even of its organization: 403', async () => {
    const { org, address } = await orgWithInbox()
    const otherAddress = await managedAddress(t.ctx, org.orgId)
    const mine = await connected(org, address)
    const theirs = await connected(org, otherAddress)
    expectError(await disconnect(mine.connection_key, otherAddress), 403, 'forbidden')
    expectError(await disconnect(mine.connection_key, `${address}x`), 403, 'forbidden')
    expectOk(await t.request('GET', '/v1/emails', { key: theirs.connection_key }))
  })

  test('an owner disconnects any address of the organization and withdraws open invitations; a member cannot', async () => {
    const { org, address } = await orgWithInbox()
    const c = await connected(org, address)
    const open = expectOk(await invite(org.key, { address }), 201)
    const memberKey = await sql.begin(async tx => {
      const userId = await ensureUser(tx, newEmail('member'))
      await addMember(tx, org.orgId, userId, 'member')
      return (await createApiKey(tx, org.orgId, userId, 'member key')).key
    })
    expectError(await disconnect(memberKey, address), 403, 'forbidden')
    const res = expectOk(await disconnect(org.key, address))
    expect(res.revoked.sort()).toEqual([c.connection_id, open.id].sort())
    expectError(await t.request('GET', '/v1/emails', { key: c.connection_key }), 401, 'unauthorized')
    expectError(await claim(open.invitation_code), 404, 'not_found')
    expectError(await disconnect(org.key, address), 404, 'not_found')
  })

  test("another organization's address: 404", async () => {
    const mine = await orgWithInbox()
    const theirs = await orgWithInbox()
    const c = await connected(theirs.org, theirs.address)
    expectError(await disconnect(mine.org.key, theirs.address), 404, 'not_found')
    expectOk(await t.request('GET', '/v1/emails', { key: c.connection_key }))
  })
})

describe('GET /v1/agent-connections/setup', () => {
  test('public JSON: steps, endpoints, the credential and what it may call', async () => {
    const guide = expectOk(await t.request('GET', '/v1/agent-connections/setup'))
    expect(guide.credential.prefix).toBe('conn_')
    expect(guide.steps.length).toBeGreaterThanOrEqual(4)
    expect(guide.endpoints.claim).toBe('POST http://api.test.local/v1/agent-connections/claim')
    expect(guide.permissions).toContainEqual({ method: 'GET', path: '/v1/emails', why: expect.any(String) })
    expect(guide.text).toContain('403 forbidden')
  })

  test('as plain text for Accept: text/plain', async () => {
    const res = await t.request('GET', '/v1/agent-connections/setup', { headers: { accept: 'text/plain' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/plain')
    expect(res.body).toContain('Connecting an agent runtime')
  })
})
