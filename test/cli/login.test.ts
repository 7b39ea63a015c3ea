/**
 * `cli login` (device authorization): start, every poll outcome, the browser approval page and
 * its refusals, and the token set (returned once, usable, refreshable at /oauth/token).
 */
import { describe, expect, test } from 'bun:test'
import { testApp, testSql } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { person } from '../oauth/helpers'
import { decideInBrowser, forgetLastPoll, loginTokens, openDevicePage, startLogin, submitDevicePage, unique } from '../helpers/identity'

const t = await testApp()
const sql = await testSql()
const poll = (device_code: string, headers: Record<string, string> = {}, ip?: string) =>
  t.request('POST', '/v1/cli/login/poll', { body: { device_code }, headers, ip })

describe('POST /v1/cli/login/start', () => {
  test('201: device code, XXXX-XXXX user code, verification URIs, expiry and interval; no-store', async () => {
    const res = await t.request('POST', '/v1/cli/login/start', { body: { client_name: 'agent-mail cli 1.0', device_name: 'laptop' } })
    const data = expectOk(res, 201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(Object.keys(data).sort()).toEqual(['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete'])
    expect(data.device_code).toMatch(/^dc_[A-Za-z0-9_-]{43}$/)
    expect(data.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
    expect(data.verification_uri).toBe('http://api.test.local/cli/device')
    expect(data.verification_uri_complete).toBe(`http://api.test.local/cli/device?user_code=${data.user_code}`)
    expect(data.expires_in).toBe(600)
    expect(data.interval).toBe(5)
    // stored hashed: the device code itself is nowhere in the table
    const [row] = await sql`select * from cli_device_codes where user_code = ${data.user_code.replace('-', '')}`
    expect(row).toMatchObject({ status: 'pending', client_name: 'agent-mail cli 1.0', device_name: 'laptop' })
    expect(JSON.stringify(row)).not.toContain(data.device_code.slice(3))
  })

  test('the body is optional', async () => {
    const a = expectOk(await t.request('POST', '/v1/cli/login/start'), 201)
    const b = expectOk(await t.request('POST', '/v1/cli/login/start', { body: {} }), 201)
    expect(a.device_code).not.toBe(b.device_code)
    expect(a.user_code).not.toBe(b.user_code)
  })

  test('unknown or oversized fields are validation errors', async () => {
    expectError(await t.request('POST', '/v1/cli/login/start', { body: { scope: 'all' } }), 400, 'validation_error', /^scope: /)
    expectError(await t.request('POST', '/v1/cli/login/start', { body: { device_name: 'x'.repeat(101) } }), 400, 'validation_error', /^device_name: /)
  })

  test('Idempotency-Key: a retry from the same address returns the same codes', async () => {
    const key = `login-${unique()}`
    const first = await t.request('POST', '/v1/cli/login/start', { body: { device_name: 'pc' }, headers: { 'idempotency-key': key } })
    const again = await t.request('POST', '/v1/cli/login/start', { body: { device_name: 'pc' }, headers: { 'idempotency-key': key } })
    expect(expectOk(again, 201)).toEqual(expectOk(first, 201))
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    const other = await t.request('POST', '/v1/cli/login/start', { body: { device_name: 'pc' }, headers: { 'idempotency-key': key }, ip: '192.0.2.77' })
    expect(expectOk(other, 201).device_code).not.toBe(expectOk(first, 201).device_code)
  })
})

describe('POST /v1/cli/login/poll outcomes', () => {
  test('unknown device code: 400 invalid_device_code', async () => {
    expectError(await poll('dc_nope'), 400, 'invalid_device_code')
    expectError(await poll('x'.repeat(200)), 400, 'invalid_device_code')
  })

  test('before the decision: 400 authorization_pending, with no-store', async () => {
    const { device_code } = await startLogin(t)
    const res = await poll(device_code)
    expectError(res, 400, 'authorization_pending')
    expect(res.headers.get('cache-control')).toBe('no-store')
  })

  test('polled faster than the interval: 400 slow_down with Retry-After; the interval grows by 5 seconds', async () => {
    const { device_code } = await startLogin(t)
    expectError(await poll(device_code), 400, 'authorization_pending')
    const fast = await poll(device_code)
    expectError(fast, 400, 'slow_down')
    expect(fast.headers.get('retry-after')).toBe('10')
    expect(fast.body.error.details).toEqual({ interval: 10 })
    const faster = await poll(device_code)
    expectError(faster, 400, 'slow_down')
    expect(faster.headers.get('retry-after')).toBe('15')
    // a poll after the (grown) interval is on time again
    await sql`update cli_device_codes set last_polled_at = now() - interval '15 seconds' where device_code_hash = sha256(${device_code}::bytea)`
    expectError(await poll(device_code), 400, 'authorization_pending')
  })

  test('denied in the browser: 403 access_denied, and it stays denied', async () => {
    const who = await person()
    const { device_code, user_code } = await startLogin(t)
    const done = await decideInBrowser(t, who, user_code, 'deny')
    expect(done.body).toContain('Request denied')
    expectError(await poll(device_code), 403, 'access_denied')
    await forgetLastPoll(device_code)
    expectError(await poll(device_code), 403, 'access_denied')
  })

  test('expired: 400 expired_token, approved or not', async () => {
    const who = await person()
    const pending = await startLogin(t)
    const approved = await startLogin(t)
    await decideInBrowser(t, who, approved.user_code, 'approve')
    for (const s of [pending, approved])
      await sql`update cli_device_codes set expires_at = now() - interval '1 second' where device_code_hash = sha256(${s.device_code}::bytea)`
    expectError(await poll(pending.device_code), 400, 'expired_token')
    expectError(await poll(approved.device_code), 400, 'expired_token')
  })

  test('approved: 200 with the token set once; a second poll is expired_token', async () => {
    const who = await person('admin')
    const { device_code, user_code } = await startLogin(t, { device_name: 'ci box' })
    const done = await decideInBrowser(t, who, user_code, 'approve')
    expect(done.body).toContain('Device approved')
    const res = await poll(device_code)
    const tokens = expectOk(res)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'org_id', 'refresh_token', 'scope', 'token_type', 'user_id'])
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'service:api', org_id: who.orgId, user_id: who.userId })
    expect(tokens.access_token).toMatch(/^svc_oat_/)
    expect(tokens.refresh_token).toMatch(/^svc_ort_/)
    await forgetLastPoll(device_code)
    expectError(await poll(device_code), 400, 'expired_token', /already exchanged/)

    // the token acts as the person, with their current role, in the chosen organization
    const whoami = expectOk(await t.request('GET', '/v1/whoami', { key: tokens.access_token }))
    expect(whoami).toMatchObject({ org_id: who.orgId, user_id: who.userId, role: 'admin', auth_method: 'oauth' })
    // a grant of the first-party client cli, refreshable at the token endpoint
    const [grant] = await sql`select client_id from oauth_grants where id = ${whoami.key_id}`
    expect(grant!.client_id).toBe('cli')
    const refreshed = await t.app.handle(
      new Request('http://api.test.local/oauth/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '192.0.2.200' },
        body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'cli', refresh_token: tokens.refresh_token }),
      }),
    )
    expect(refreshed.status).toBe(200)
    expect(((await refreshed.json()) as { access_token: string }).access_token).toMatch(/^svc_oat_/)
  })

  test('the first-party clients cannot be used on the authorization page', async () => {
    for (const client of ['cli', 'agent']) {
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: client,
        redirect_uri: 'urn:ietf:wg:oauth:2.0:oob',
        code_challenge: 'A'.repeat(43),
        code_challenge_method: 'S256',
      })
      const res = await t.request('GET', `/oauth/authorize?${query}`)
      expect(res.status).toBe(400)
      expect(res.headers.get('location')).toBeNull()
      expect(res.body).toContain('unknown client_id')
    }
  })

  test('Idempotency-Key on the successful poll: a retry from the same address replays the token set', async () => {
    const who = await person()
    const { device_code, user_code } = await startLogin(t)
    await decideInBrowser(t, who, user_code, 'approve')
    const key = `poll-${unique()}`
    const first = expectOk(await poll(device_code, { 'idempotency-key': key }))
    const again = await poll(device_code, { 'idempotency-key': key })
    expect(expectOk(again)).toEqual(first)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    // another key, or another address, gets nothing more
    expectError(await poll(device_code, { 'idempotency-key': `other-${unique()}` }), 400, 'expired_token')
    expectError(await poll(device_code, { 'idempotency-key': key }, '192.0.2.99'), 400, 'expired_token')
  })

  test('the organization is the one chosen; a person removed since approval gets access_denied', async () => {
    const other = await person()
    const who = await person('owner', [{ orgId: other.orgId, role: 'member' }])
    const tokens = await loginTokens(t, who, other.orgId)
    expect(tokens.org_id).toBe(other.orgId)
    expect(expectOk(await t.request('GET', '/v1/whoami', { key: tokens.access_token })).role).toBe('member')

    const { device_code, user_code } = await startLogin(t)
    await decideInBrowser(t, who, user_code, 'approve', other.orgId)
    await sql`delete from memberships where org_id = ${other.orgId} and user_id = ${who.userId}`
    expectError(await poll(device_code), 403, 'access_denied')
  })
})

describe('GET and POST /cli/device (the approval page)', () => {
  test('public HTML with the page security headers and the code prefilled', async () => {
    const { user_code } = await startLogin(t)
    const page = await openDevicePage(t, user_code.toLowerCase())
    const h = page.res.headers
    expect(h.get('content-type')).toBe('text/html;charset=utf-8')
    expect(h.get('cache-control')).toBe('no-store')
    expect(h.get('x-frame-options')).toBe('DENY')
    expect(h.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(h.get('content-security-policy')).toContain("form-action 'self'")
    expect(h.get('content-security-policy')).not.toContain('script-src')
    expect(page.html).toContain(`value="${user_code}"`)
    expect(page.cookie).toMatch(/^cli_browser=[A-Za-z0-9_-]{43}$/)
    expect(h.get('set-cookie')).toContain('HttpOnly')
    expect(page.html).not.toContain('<script')
  })

  test('wrong password, unknown code, missing fields: the form again with an error; nothing approved', async () => {
    const who = await person()
    const { device_code, user_code } = await startLogin(t)
    const page = await openDevicePage(t)
    const wrong = await submitDevicePage(t, page, { user_code, email: who.email, password: 'not the password' })
    expect(wrong.status).toBe(400)
    expect(wrong.body).toContain('The email address or password is incorrect.')
    const unknown = await submitDevicePage(t, page, { user_code: 'BBBB-BBBB', email: who.email, password: who.password })
    expect(unknown.status).toBe(400)
    expect(unknown.body).toContain('That code is unknown or has expired.')
    const missing = await submitDevicePage(t, page, { email: who.email, password: who.password })
    expect(missing.status).toBe(400)
    // approving needs a signed-in page: a bare approve is just the sign-in form again
    const bare = await submitDevicePage(t, page, { action: 'approve', org_id: who.orgId })
    expect(bare.status).toBe(400)
    expectError(await poll(device_code), 400, 'authorization_pending')
  })

  test('escaping: values echoed into the page are escaped', async () => {
    const page = await openDevicePage(t)
    const res = await submitDevicePage(t, page, { user_code: '"><script>x</script>', email: 'a"><b>@example.test', password: 'pw' })
    expect(res.body).not.toContain('<script>x')
    expect(res.body).toContain('&#34;&#62;&#60;script&#62;')
  })

  test('another browser (cookie) or a wrong CSRF token: 403', async () => {
    const who = await person()
    const { user_code } = await startLogin(t)
    const page = await openDevicePage(t)
    const otherBrowser = await openDevicePage(t)
    const stolen = await submitDevicePage(t, { ...page, cookie: otherBrowser.cookie }, { user_code, email: who.email, password: who.password })
    expect(stolen.status).toBe(403)
    const forged = await submitDevicePage(t, { ...page, csrf: otherBrowser.csrf }, { user_code, email: who.email, password: who.password })
    expect(forged.status).toBe(403)
    const noPage = await submitDevicePage(t, { ...page, pageId: crypto.randomUUID() }, { user_code })
    expect(noPage.status).toBe(400)
  })

  test("approving needs one of the person's organizations; the page completes once", async () => {
    const who = await person()
    const stranger = await person()
    const { device_code, user_code } = await startLogin(t)
    const page = await openDevicePage(t, user_code)
    const confirm = await submitDevicePage(t, page, { user_code, email: who.email, password: who.password })
    expect(confirm.status).toBe(200)
    expect(confirm.body).toContain(user_code)
    expect(confirm.body).toContain(`value="${who.orgId}"`)
    const foreign = await submitDevicePage(t, page, { action: 'approve', org_id: stranger.orgId })
    expect(foreign.status).toBe(400)
    expect(foreign.body).toContain('Choose one of your organizations.')
    expect((await submitDevicePage(t, page, { action: 'approve', org_id: who.orgId })).status).toBe(200)
    const twice = await submitDevicePage(t, page, { action: 'deny' })
    expect(twice.status).toBe(400)
    expect(expectOk(await poll(device_code)).org_id).toBe(who.orgId)
  })

  test('a code already decided cannot be approved again from another page', async () => {
    const who = await person()
    const { user_code } = await startLogin(t)
    await decideInBrowser(t, who, user_code, 'deny')
    const page = await openDevicePage(t, user_code)
    const res = await submitDevicePage(t, page, { user_code, email: who.email, password: who.password })
    expect(res.status).toBe(400)
    expect(res.body).toContain('That code is unknown or has expired.')
  })
})
