/**
 * Agent signup: a new address gets an agent-plan workspace; an existing person's agent joins one
 * of their workspaces (org_id, or the only one), with 403 for a foreign org_id and 409 when the
 * choice is ambiguous or impossible. Codes, resend and Idempotency-Key as for the CLI signup.
 */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp, testSql } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { person } from '../oauth/helpers'
import { addMember } from '../../src/account/membership-queries'
import { ensureUser } from '../../src/account/user-queries'
import { lastCode, mailsTo, newEmail, unique, wrongCode } from '../helpers/identity'

const t = await testApp()
const sql = await testSql()

const start = (body: Record<string, unknown>, headers: Record<string, string> = {}, ip?: string) =>
  t.request('POST', '/v1/agent/signup/start', { body, headers, ip })
const verify = (body: Record<string, unknown>, headers: Record<string, string> = {}, ip?: string) =>
  t.request('POST', '/v1/agent/signup/verify', { body, headers, ip })

async function started(email = newEmail('agent')) {
  const data = expectOk(await start({ email, terms_accepted: true, device_name: 'build-runner' }), 201)
  return { email, token: data.signup_token as string, code: await lastCode(email) }
}

describe('POST /v1/agent/signup/start', () => {
  test('201 with a signup token; a 6-digit code is mailed', async () => {
    const email = newEmail('agent')
    const res = await start({ email, terms_accepted: true, device_name: 'build-runner' })
    expect(expectOk(res, 201).signup_token).toMatch(/^sgt_/)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const mails = await mailsTo(email)
    expect(mails).toHaveLength(1)
    expect(mails[0]!.code).toMatch(/^\d{6}$/)
    expect(mails[0]!.text).toContain('your agent')
  })

  test('device_name and terms_accepted true are required', async () => {
    const email = newEmail('agent')
    expectError(await start({ email, terms_accepted: true }), 400, 'validation_error', /^device_name: is required/)
    expectError(await start({ email, terms_accepted: false, device_name: 'x' }), 400, 'validation_error', /^terms_accepted: must be true/)
    expectError(await start({ email, terms_accepted: true, device_name: '' }), 400, 'validation_error', /^device_name: /)
  })

  test('per email address: 429 rate_limit_exceeded past 10 requests a minute, whatever the client address', async () => {
    const email = newEmail('agent')
    let limited: Awaited<ReturnType<typeof start>> | undefined
    for (let i = 0; i < 12 && !limited; i++) {
      const res = await start({ email, terms_accepted: true, device_name: `d${i}` }, {}, `192.0.2.${100 + i}`)
      if (res.status === 429) limited = res
    }
    expect(limited).toBeDefined()
    expectError(limited!, 429, 'rate_limit_exceeded')
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test('Idempotency-Key: a replay returns the same token, one mail', async () => {
    const email = newEmail('agent')
    const key = `agent-${unique()}`
    const body = { email, terms_accepted: true, device_name: 'runner' }
    const first = expectOk(await start(body, { 'idempotency-key': key }), 201)
    const again = await start(body, { 'idempotency-key': key })
    expect(expectOk(again, 201)).toEqual(first)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await mailsTo(email)).toHaveLength(1)
  })
})

describe('POST /v1/agent/signup/resend', () => {
  test('within a minute: 429 rate_limit_exceeded with Retry-After; later: 200 and a new code', async () => {
    const s = await started()
    const res = await t.request('POST', '/v1/agent/signup/resend', { body: { signup_token: s.token } })
    expectError(res, 429, 'rate_limit_exceeded')
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    await sql`update signups set last_sent_at = now() - interval '2 minutes' where token_hash = sha256(${s.token}::bytea)`
    expectOk(await t.request('POST', '/v1/agent/signup/resend', { body: { signup_token: s.token } }))
    expect(await mailsTo(s.email)).toHaveLength(2)
  })
})

describe('POST /v1/agent/signup/verify', () => {
  test('a new address: a person without a password, owner of an agent-plan workspace with a managed inbox; agent tokens once', async () => {
    const s = await started()
    const res = await verify({ signup_token: s.token, verification_code: s.code })
    const data = expectOk(res)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(data.access_token).toMatch(/^svc_oat_/)
    expect(data.inbox.address).toMatch(/@agents\.test\.local$/)
    const whoami = expectOk(await t.request('GET', '/v1/whoami', { key: data.access_token }))
    expect(whoami).toMatchObject({ org_id: data.org_id, user_id: data.user_id, role: 'owner', auth_method: 'oauth' })
    expect(expectOk(await t.request('GET', '/v1/account', { key: data.access_token })).plan).toBe('agent')
    const [user] = await sql`select email, password_hash from users where id = ${data.user_id}`
    expect(user).toEqual({ email: s.email, password_hash: null })
    const [grant] = await sql`select client_id from oauth_grants where id = ${whoami.key_id}`
    expect(grant!.client_id).toBe('agent')
    expectError(await verify({ signup_token: s.token, verification_code: s.code }), 409, 'conflict')
  })

  test('a new address with an org_id: 403 forbidden, and the signup stays open', async () => {
    const s = await started()
    const other = await createOrg()
    expectError(await verify({ signup_token: s.token, verification_code: s.code, org_id: other.orgId }), 403, 'forbidden', /^org_id: /)
    expectOk(await verify({ signup_token: s.token, verification_code: s.code }))
  })

  test('an existing person with one workspace: that one, with their role there; no new inbox', async () => {
    const who = await person('admin')
    const s = await started(who.email)
    const data = expectOk(await verify({ signup_token: s.token, verification_code: s.code }))
    expect(data).toMatchObject({ org_id: who.orgId, user_id: who.userId, inbox: null })
    expect(expectOk(await t.request('GET', '/v1/whoami', { key: data.access_token })).role).toBe('admin')
    expect(await verifyPassword(who.email)).toBe(true)
  })

  test('an existing person with several workspaces: 409 listing them, then org_id picks one; a foreign org_id is 403', async () => {
    const second = await createOrg()
    const who = await person('owner', [{ orgId: second.orgId, role: 'member' }])
    const s = await started(who.email)
    const ambiguous = await verify({ signup_token: s.token, verification_code: s.code })
    expectError(ambiguous, 409, 'conflict')
    expect(ambiguous.body.error.details.reason).toBe('org_selection_required')
    expect(ambiguous.body.error.details.orgs.map((o: { org_id: string }) => o.org_id).sort()).toEqual([who.orgId, second.orgId].sort())
    expect(ambiguous.body.error.details.orgs.find((o: { org_id: string }) => o.org_id === second.orgId).role).toBe('member')

    const stranger = await createOrg()
    expectError(await verify({ signup_token: s.token, verification_code: s.code, org_id: stranger.orgId }), 403, 'forbidden')

    const data = expectOk(await verify({ signup_token: s.token, verification_code: s.code, org_id: second.orgId }))
    expect(data.org_id).toBe(second.orgId)
    expect(expectOk(await t.request('GET', '/v1/whoami', { key: data.access_token })).role).toBe('member')
  })

  test('an existing person in no workspace: 409 no_usable_workspace', async () => {
    const email = newEmail('orphan')
    await sql.begin(tx => ensureUser(tx, email))
    const s = await started(email)
    const res = await verify({ signup_token: s.token, verification_code: s.code })
    expectError(res, 409, 'conflict')
    expect(res.body.error.details).toEqual({ reason: 'no_usable_workspace' })
    // once they are added somewhere, the same signup completes
    const org = await createOrg()
    await sql.begin(async tx => addMember(tx, org.orgId, (await tx`select id from users where email = ${email}`)[0]!.id, 'member'))
    expect(expectOk(await verify({ signup_token: s.token, verification_code: s.code })).org_id).toBe(org.orgId)
  })

  test('wrong codes: attempts count down and the fifth ends the signup', async () => {
    const s = await started()
    for (let left = 4; left >= 0; left--) {
      const res = await verify({ signup_token: s.token, verification_code: wrongCode(s.code) })
      expectError(res, 400, 'validation_error', /^verification_code: is incorrect/)
      expect(res.body.error.details.attempts_remaining).toBe(left)
    }
    expectError(await verify({ signup_token: s.token, verification_code: s.code }), 400, 'validation_error', /^signup_token: /)
  })

  test('an expired code: 400 code_expired', async () => {
    const s = await started()
    await sql`update signups set code_expires_at = now() - interval '1 second' where token_hash = sha256(${s.token}::bytea)`
    const res = await verify({ signup_token: s.token, verification_code: s.code })
    expectError(res, 400, 'validation_error', /^verification_code: has expired/)
    expect(res.body.error.details.reason).toBe('code_expired')
  })

  test('Idempotency-Key: a replay returns the same tokens, no second account or grant', async () => {
    const s = await started()
    const key = `agent-verify-${unique()}`
    const first = expectOk(await verify({ signup_token: s.token, verification_code: s.code }, { 'idempotency-key': key }))
    const again = await verify({ signup_token: s.token, verification_code: s.code }, { 'idempotency-key': key })
    expect(expectOk(again)).toEqual(first)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    const [{ n }] = (await sql`select count(*)::int as n from oauth_grants where user_id = ${first.user_id}`) as [{ n: number }]
    expect(n).toBe(1)
  })

  test('a CLI signup token is not an agent signup token', async () => {
    const email = newEmail()
    const cli = expectOk(await t.request('POST', '/v1/cli/signup/start', { body: { email, terms_accepted: true } }), 201)
    expectError(await verify({ signup_token: cli.signup_token, verification_code: await lastCode(email) }), 400, 'validation_error', /^signup_token: /)
  })
})

async function verifyPassword(email: string): Promise<boolean> {
  const [row] = await sql`select password_hash is not null as has from users where lower(email) = lower(${email})`
  return row!.has
}
