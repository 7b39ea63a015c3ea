/**
 * `cli signup`: start (the code mail), resend (once a minute), verify (wrong and expired codes,
 * the five-attempt limit, the account it creates) and Idempotency-Key on each.
 */
import { describe, expect, test } from 'bun:test'
import { testApp, testSql } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { person } from '../oauth/helpers'
import { verifyPassword } from '../../src/oauth/sign-in'
import { lastCode, mailsTo, newEmail, unique, wrongCode } from '../helpers/identity'

const t = await testApp()
const sql = await testSql()
const PASSWORD = 'a long enough password'

const start = (body: Record<string, unknown>, headers: Record<string, string> = {}, ip?: string) =>
  t.request('POST', '/v1/cli/signup/start', { body, headers, ip })
const resend = (signup_token: string, headers: Record<string, string> = {}) => t.request('POST', '/v1/cli/signup/resend', { body: { signup_token }, headers })
const verify = (body: Record<string, unknown>, headers: Record<string, string> = {}, ip?: string) =>
  t.request('POST', '/v1/cli/signup/verify', { body, headers, ip })

async function started(email = newEmail(), extra: Record<string, unknown> = {}) {
  const res = await start({ email, terms_accepted: true, ...extra })
  const data = expectOk(res, 201)
  return { email, token: data.signup_token as string, code: await lastCode(email), res }
}

/** Lets the next resend through (tests do not wait out the minute). */
const ageLastSend = (token: string) => sql`update signups set last_sent_at = now() - interval '61 seconds' where token_hash = sha256(${token}::bytea)`

describe('POST /v1/cli/signup/start', () => {
  test('201 with an opaque signup token (no-store); the code is mailed from the service, stored only as an HMAC', async () => {
    const s = await started()
    expect(s.res.headers.get('cache-control')).toBe('no-store')
    expect(s.res.body.data).toEqual({ signup_token: s.token, code_expires_in: 900, resend_after: 60 })
    expect(s.token).toMatch(/^sgt_[A-Za-z0-9_-]{43}$/)
    const mails = await mailsTo(s.email)
    expect(mails).toHaveLength(1)
    expect(mails[0]!.from).toBe('no-reply@agents.test.local')
    expect(mails[0]!.subject).toBe(`Your verification code: ${s.code}`)
    expect(s.code).toMatch(/^\d{6}$/)
    const [row] = await sql`select * from signups where token_hash = sha256(${s.token}::bytea)`
    expect(row).toMatchObject({ kind: 'cli', email: s.email, failed_attempts: 0, sends: 1 })
    expect(JSON.stringify(row)).not.toContain(s.code)
    expect(row!.code_hmac.length).toBe(32)
  })

  test('terms_accepted must be true; the email must be an address; nothing is sent', async () => {
    const email = newEmail()
    expectError(await start({ email, terms_accepted: false }), 400, 'validation_error', /^terms_accepted: must be true/)
    expectError(await start({ email }), 400, 'validation_error', /^terms_accepted: /)
    expectError(await start({ email: 'not an address', terms_accepted: true }), 400, 'validation_error', /^email: /)
    expectError(await start({ email, terms_accepted: true, plan: 'power' }), 400, 'validation_error', /^plan: is not a known field/)
    expect(await mailsTo(email)).toHaveLength(0)
  })

  test('Idempotency-Key: a replay returns the same token and sends no second mail', async () => {
    const email = newEmail()
    const key = `signup-${unique()}`
    const first = expectOk(await start({ email, terms_accepted: true }, { 'idempotency-key': key }), 201)
    const again = await start({ email, terms_accepted: true }, { 'idempotency-key': key })
    expect(expectOk(again, 201)).toEqual(first)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await mailsTo(email)).toHaveLength(1)
    expectError(await start({ email: newEmail(), terms_accepted: true }, { 'idempotency-key': key }), 409, 'conflict')
  })

  test('per email address: 429 rate_limit_exceeded with Retry-After past 10 signups a day', async () => {
    const email = newEmail()
    for (let i = 0; i < 10; i++) expectOk(await start({ email, terms_accepted: true }, {}, `192.0.2.${i + 10}`), 201)
    const res = await start({ email: email.toUpperCase(), terms_accepted: true }, {}, '192.0.2.30')
    expectError(res, 429, 'rate_limit_exceeded')
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
  })
})

describe('POST /v1/cli/signup/resend', () => {
  test('within a minute of the last code: 429 rate_limit_exceeded with Retry-After', async () => {
    const s = await started()
    const res = await resend(s.token)
    expectError(res, 429, 'rate_limit_exceeded')
    const wait = Number(res.headers.get('retry-after'))
    expect(wait).toBeGreaterThan(50)
    expect(wait).toBeLessThanOrEqual(60)
    expect(await mailsTo(s.email)).toHaveLength(1)
  })

  test('after a minute: 200, a new code is mailed and the previous one stops working', async () => {
    const s = await started()
    await ageLastSend(s.token)
    const res = await resend(s.token)
    expect(expectOk(res)).toEqual({ sent: true, code_expires_in: 900, resend_after: 60 })
    const mails = await mailsTo(s.email)
    expect(mails).toHaveLength(2)
    const fresh = mails[1]!.code
    if (fresh !== s.code)
      expectError(
        await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD }),
        400,
        'validation_error',
        /^verification_code: is incorrect/,
      )
    expectOk(await verify({ signup_token: s.token, verification_code: fresh, password: PASSWORD }))
    // a completed signup cannot be resent
    await ageLastSend(s.token)
    expectError(await resend(s.token), 400, 'validation_error', /^signup_token: /)
  })

  test('Idempotency-Key: a replay answers 200 again without another mail', async () => {
    const s = await started()
    await ageLastSend(s.token)
    const key = `resend-${unique()}`
    expectOk(await resend(s.token, { 'idempotency-key': key }))
    const again = await resend(s.token, { 'idempotency-key': key })
    expectOk(again)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await mailsTo(s.email)).toHaveLength(2)
  })

  test('an unknown token, or an agent signup token: 400 naming signup_token', async () => {
    expectError(await resend('sgt_unknown'), 400, 'validation_error', /^signup_token: unknown/)
    const email = newEmail()
    const agent = expectOk(await t.request('POST', '/v1/agent/signup/start', { body: { email, terms_accepted: true, device_name: 'bot' } }), 201)
    await ageLastSend(agent.signup_token)
    expectError(await resend(agent.signup_token), 400, 'validation_error', /^signup_token: /)
  })
})

describe('POST /v1/cli/signup/verify', () => {
  test('200: account with an argon2id password, a free organization it owns, a managed inbox, a cli token set (no-store)', async () => {
    const s = await started(newEmail(), { name: 'Ada', org_name: 'Analytical Engines' })
    const res = await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD })
    const data = expectOk(res)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(data).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'service:api' })
    expect(data.access_token).toMatch(/^svc_oat_/)
    expect(data.refresh_token).toMatch(/^svc_ort_/)
    expect(data.inbox.address).toMatch(/@agents\.test\.local$/)

    const whoami = expectOk(await t.request('GET', '/v1/whoami', { key: data.access_token }))
    expect(whoami).toMatchObject({ org_id: data.org_id, user_id: data.user_id, role: 'owner', auth_method: 'oauth' })
    expect(expectOk(await t.request('GET', '/v1/account', { key: data.access_token })).plan).toBe('free')
    const [org] = await sql`select name from orgs where id = ${data.org_id}`
    expect(org!.name).toBe('Analytical Engines')
    const [user] = await sql`select email, password_hash from users where id = ${data.user_id}`
    expect(user!.email).toBe(s.email)
    expect(user!.password_hash).toStartWith('$argon2id$')
    expect(await verifyPassword(sql, s.email, PASSWORD)).toBe(data.user_id)
    const [grant] = await sql`select client_id from oauth_grants where id = ${whoami.key_id}`
    expect(grant!.client_id).toBe('cli')
    const inboxes = expectOk(await t.request('GET', '/v1/inboxes', { key: data.access_token }))
    expect(inboxes.map((i: { address: string }) => i.address)).toEqual([data.inbox.address])
  })

  test('the token set comes once: verifying again is 409 conflict', async () => {
    const s = await started()
    expectOk(await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD }))
    expectError(await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD }), 409, 'conflict')
  })

  test('Idempotency-Key: a replay from the same address returns the same token set; from another address the key replays nothing (409, completed)', async () => {
    const s = await started()
    const key = `verify-${unique()}`
    const body = { signup_token: s.token, verification_code: s.code, password: PASSWORD }
    const first = expectOk(await verify(body, { 'idempotency-key': key }))
    const again = await verify(body, { 'idempotency-key': key })
    expect(expectOk(again)).toEqual(first)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    const [{ n }] = (await sql`select count(*)::int as n from users where lower(email) = lower(${s.email})`) as [{ n: number }]
    expect(n).toBe(1)
    expectError(await verify(body, { 'idempotency-key': key }, '192.0.2.55'), 409, 'conflict')
  })

  test('wrong codes count down; the fifth ends the signup, even for the right code afterwards', async () => {
    const s = await started()
    const bad = { signup_token: s.token, verification_code: wrongCode(s.code), password: PASSWORD }
    for (let left = 4; left >= 1; left--) {
      const res = await verify(bad)
      expectError(res, 400, 'validation_error', /^verification_code: is incorrect/)
      expect(res.body.error.details).toEqual({ reason: 'code_incorrect', attempts_remaining: left })
    }
    const fifth = await verify(bad)
    expectError(fifth, 400, 'validation_error')
    expect(fifth.body.error.details).toEqual({ reason: 'signup_token_invalid', attempts_remaining: 0 })
    const right = await verify({ ...bad, verification_code: s.code })
    expectError(right, 400, 'validation_error', /^signup_token: /)
    expect(right.body.error.details.reason).toBe('signup_token_invalid')
    const [row] = await sql`select failed_attempts, completed_at from signups where token_hash = sha256(${s.token}::bytea)`
    expect(row).toEqual({ failed_attempts: 5, completed_at: null })
  })

  test('wrong attempts are not reset by a resend', async () => {
    const s = await started()
    for (let i = 0; i < 4; i++) await verify({ signup_token: s.token, verification_code: wrongCode(s.code), password: PASSWORD })
    await ageLastSend(s.token)
    expectOk(await resend(s.token))
    const fresh = await lastCode(s.email)
    const res = await verify({ signup_token: s.token, verification_code: wrongCode(fresh), password: PASSWORD })
    expect(res.body.error.details).toEqual({ reason: 'signup_token_invalid', attempts_remaining: 0 })
    expectError(await verify({ signup_token: s.token, verification_code: fresh, password: PASSWORD }), 400, 'validation_error', /^signup_token: /)
  })

  test('a code older than 15 minutes: 400 code_expired, and resend gives a working one', async () => {
    const s = await started()
    await sql`update signups set code_expires_at = now() - interval '1 second', last_sent_at = now() - interval '16 minutes' where token_hash = sha256(${s.token}::bytea)`
    const res = await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD })
    expectError(res, 400, 'validation_error', /^verification_code: has expired/)
    expect(res.body.error.details).toEqual({ reason: 'code_expired' })
    expectOk(await resend(s.token))
    expectOk(await verify({ signup_token: s.token, verification_code: await lastCode(s.email), password: PASSWORD }))
  })

  test('an expired signup token: 400 signup_token_invalid', async () => {
    const s = await started()
    await sql`update signups set expires_at = now() - interval '1 second' where token_hash = sha256(${s.token}::bytea)`
    const res = await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD })
    expectError(res, 400, 'validation_error', /^signup_token: /)
  })

  test('a password shorter than 12 characters, or a malformed code: 400 before the code is checked', async () => {
    const s = await started()
    expectError(
      await verify({ signup_token: s.token, verification_code: s.code, password: 'short' }),
      400,
      'validation_error',
      /^password: must be at least 12 characters/,
    )
    expectError(
      await verify({ signup_token: s.token, verification_code: '12345', password: PASSWORD }),
      400,
      'validation_error',
      /^verification_code: must be the 6-digit code/,
    )
    const [row] = await sql`select failed_attempts from signups where token_hash = sha256(${s.token}::bytea)`
    expect(row!.failed_attempts).toBe(0)
  })

  test('an address that already has an account with a password: 409 account_exists; the password is unchanged', async () => {
    const existing = await person()
    const s = await started(existing.email)
    const res = await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD })
    expectError(res, 409, 'conflict')
    expect(res.body.error.details).toEqual({ reason: 'account_exists' })
    expect(await verifyPassword(sql, existing.email, existing.password)).toBe(existing.userId)
  })

  test('an address known without a password (an agent signup) gets the password and a new organization', async () => {
    const email = newEmail()
    const agent = expectOk(await t.request('POST', '/v1/agent/signup/start', { body: { email, terms_accepted: true, device_name: 'bot' } }), 201)
    const agentTokens = expectOk(
      await t.request('POST', '/v1/agent/signup/verify', { body: { signup_token: agent.signup_token, verification_code: await lastCode(email) } }),
    )
    const s = await started(email)
    const data = expectOk(await verify({ signup_token: s.token, verification_code: s.code, password: PASSWORD }))
    expect(data.user_id).toBe(agentTokens.user_id)
    expect(data.org_id).not.toBe(agentTokens.org_id)
    expect(await verifyPassword(sql, email, PASSWORD)).toBe(data.user_id)
  })
})
