/**
 * The operator command that gives a person a password, and how bearer resolution tells OAuth
 * access tokens from API keys (both start with svc_).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { createUserCommand, UsageError } from '../../src/admin/commands'
import { sha256 } from '../../src/crypto'
import { createOrg, testSql } from '../helpers/app'
import { callApi, oauthServer, obtainTokens, registerClient } from './helpers'

const sql = await testSql()
const s = await oauthServer()
afterAll(() => s.stop())

describe('bun run admin user create', () => {
  test('creates a person with an argon2id password who can then authorize a client', async () => {
    const org = await createOrg()
    const email = `Operator-${crypto.randomUUID()}@Example.test`
    const out = await createUserCommand(sql, { email, password: 'a long enough password', org: org.orgId, role: 'admin' })
    expect(out).toEqual({ user_id: expect.any(String), email, org_id: org.orgId, role: 'admin' })
    const [row] = await sql<{ password_hash: string }[]>`select password_hash from users where id = ${out.user_id}`
    expect(row!.password_hash).toStartWith('$argon2id$')

    // sign-in matches the address case-insensitively
    const tokens = await obtainTokens(s, await registerClient(s), {
      email: email.toLowerCase(),
      password: 'a long enough password',
      userId: out.user_id,
      orgId: org.orgId,
    })
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).body.data).toMatchObject({ user_id: out.user_id, role: 'admin', auth_method: 'oauth' })
  })

  test('for an existing person: sets the password, adds the membership, keeps a role unless --role is given', async () => {
    const org = await createOrg()
    const other = await createOrg()
    const email = `again-${crypto.randomUUID()}@example.test`
    const first = await createUserCommand(sql, { email, password: 'first password', org: org.orgId, role: 'owner' })
    const second = await createUserCommand(sql, { email, password: 'second password', org: org.orgId })
    expect(second).toMatchObject({ user_id: first.user_id, role: 'owner' })
    const third = await createUserCommand(sql, { email, password: 'second password', org: other.orgId })
    expect(third).toMatchObject({ user_id: first.user_id, org_id: other.orgId, role: 'member' })
    const [row] = await sql<{ password_hash: string }[]>`select password_hash from users where id = ${first.user_id}`
    expect(await Bun.password.verify('second password', row!.password_hash)).toBe(true)
    expect(await createUserCommand(sql, { email, password: 'third password' })).toEqual({ user_id: first.user_id, email })
  })

  test('usage errors', async () => {
    const org = await createOrg()
    await expect(createUserCommand(sql, { password: 'long enough' })).rejects.toBeInstanceOf(UsageError)
    await expect(createUserCommand(sql, { email: 'not-an-address', password: 'long enough' })).rejects.toBeInstanceOf(UsageError)
    await expect(createUserCommand(sql, { email: 'a@example.test', password: 'short' })).rejects.toBeInstanceOf(UsageError)
    await expect(createUserCommand(sql, { email: 'a@example.test', password: 'long enough', org: org.orgId, role: 'boss' })).rejects.toBeInstanceOf(UsageError)
    await expect(createUserCommand(sql, { email: 'a@example.test', password: 'long enough', role: 'admin' })).rejects.toBeInstanceOf(UsageError)
    await expect(createUserCommand(sql, { email: 'a@example.test', password: 'long enough', org: randomUUIDv7() })).rejects.toBeInstanceOf(UsageError)
  })
})

describe('bearer resolution', () => {
  test('an API key that happens to begin with svc_oat_ still works as an API key', async () => {
    const org = await createOrg()
    const key = `svc_oat_${crypto.randomUUID().replaceAll('-', '')}`
    await sql`insert into api_keys (id, org_id, created_by, name, hint, hash) values (${randomUUIDv7()}, ${org.orgId}, ${org.userId}, 'lucky', 'svc_oat_', ${sha256(key)})`
    const who = await callApi(s, key, 'GET', '/v1/whoami')
    expect(who.status).toBe(200)
    expect(who.body.data.auth_method).toBe('api_key')
  })

  test('API keys resolve as before', async () => {
    const org = await createOrg()
    const who = await callApi(s, org.key, 'GET', '/v1/whoami')
    expect(who.body.data).toMatchObject({ auth_method: 'api_key', key_id: org.keyId, user_id: org.userId })
  })

  test('an unknown svc_oat_ token is 401 unauthorized in the v1 envelope', async () => {
    const res = await callApi(s, `svc_oat_${'x'.repeat(43)}`, 'GET', '/v1/whoami')
    expect(res.status).toBe(401)
    expect(res.body).toMatchObject({ success: false, error: { code: 'unauthorized' } })
  })
})
