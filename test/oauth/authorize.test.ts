/**
 * The authorization page: refusals of the authorization request (PKCE, redirect URI, client),
 * the page's own defences (escaping, framing, caching, CSRF and browser binding), sign-in
 * failures, denial, and single use of the pending request.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { authorizeUrl, loadPage, oauthServer, person, pkce, registerClient, REDIRECT, submit } from './helpers'

const s = await oauthServer()
afterAll(() => s.stop())
const client = await registerClient(s, [REDIRECT, 'https://app.example/cb?tenant=7'])

/** The error redirect of a GET with these parameter changes. */
async function refusedWith(overrides: Record<string, string | null>) {
  const p = await pkce()
  const res = await s.fetch(authorizeUrl(s, client, p, overrides))
  expect(res.status).toBe(302)
  const location = new URL(res.headers.get('location')!)
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT)
  // oauth4webapi checks iss and state, and raises the error the client will see
  let raised: unknown
  try {
    oauth.validateAuthResponse(s.as, client, location, p.state)
  } catch (error) {
    raised = error
  }
  expect(raised).toBeInstanceOf(oauth.AuthorizationResponseError)
  return { error: location.searchParams.get('error'), description: location.searchParams.get('error_description') ?? '' }
}

/** A GET that must be answered with an error page and never a redirect. */
async function errorPageFor(path: string) {
  const res = await s.fetch(path)
  expect(res.status).toBe(400)
  expect(res.headers.get('location')).toBeNull()
  expect(res.headers.get('content-type')).toStartWith('text/html')
  return res.text()
}

describe('PKCE is required, S256 only', () => {
  test('a missing code_challenge is invalid_request', async () => {
    expect(await refusedWith({ code_challenge: null })).toMatchObject({ error: 'invalid_request', description: expect.stringContaining('code_challenge') })
  })

  test('code_challenge_method plain is refused', async () => {
    const p = await pkce()
    expect(await refusedWith({ code_challenge: p.verifier, code_challenge_method: 'plain' })).toMatchObject({
      error: 'invalid_request',
      description: expect.stringContaining('S256'),
    })
  })

  test('a missing code_challenge_method (which would mean plain) is refused', async () => {
    expect((await refusedWith({ code_challenge_method: null })).error).toBe('invalid_request')
  })

  test('any other method is refused', async () => {
    expect((await refusedWith({ code_challenge_method: 'S512' })).error).toBe('invalid_request')
    expect((await refusedWith({ code_challenge_method: 's256' })).error).toBe('invalid_request')
  })

  test('a challenge that is not a base64url SHA-256 is refused', async () => {
    expect((await refusedWith({ code_challenge: 'too-short' })).error).toBe('invalid_request')
    expect((await refusedWith({ code_challenge: 'A'.repeat(42) + '=' })).error).toBe('invalid_request')
  })
})

describe('other redirected refusals', () => {
  test('response_type token is unsupported_response_type; a missing one is invalid_request', async () => {
    expect((await refusedWith({ response_type: 'token' })).error).toBe('unsupported_response_type')
    expect((await refusedWith({ response_type: null })).error).toBe('invalid_request')
  })

  test('an unknown scope is invalid_scope', async () => {
    expect((await refusedWith({ scope: 'service:api admin' })).error).toBe('invalid_scope')
  })

  test('a resource other than this API is invalid_target', async () => {
    expect((await refusedWith({ resource: 'https://elsewhere.example/v1' })).error).toBe('invalid_target')
    const ok = await s.fetch(authorizeUrl(s, client, await pkce(), { resource: `${s.origin}/v1` }))
    expect(ok.status).toBe(200)
  })

  test('a parameter given twice is invalid_request', async () => {
    const p = await pkce()
    const res = await s.fetch(`${authorizeUrl(s, client, p)}&code_challenge_method=plain`)
    expect(res.status).toBe(302)
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_request')
  })

  test('the registered query of a redirect URI is kept', async () => {
    const p = await pkce()
    const res = await s.fetch(authorizeUrl(s, client, p, { redirect_uri: 'https://app.example/cb?tenant=7', response_type: 'token' }))
    const location = new URL(res.headers.get('location')!)
    expect(location.searchParams.get('tenant')).toBe('7')
    expect(location.searchParams.get('error')).toBe('unsupported_response_type')
    expect(location.searchParams.get('state')).toBe(p.state)
  })
})

describe('never redirected: the client or the redirect URI is in doubt', () => {
  test('a redirect_uri that is not registered exactly', async () => {
    for (const uri of [
      'http://127.0.0.1:8765/callback/',
      'http://127.0.0.1:8766/callback',
      'http://localhost:8765/callback',
      'https://evil.example/callback',
      'https://app.example/cb',
    ]) {
      expect(await errorPageFor(authorizeUrl(s, client, await pkce(), { redirect_uri: uri }))).toContain('redirect_uri does not exactly match')
    }
  })

  test('a missing redirect_uri', async () => {
    expect(await errorPageFor(authorizeUrl(s, client, await pkce(), { redirect_uri: null }))).toContain('no redirect_uri')
  })

  test('an unknown or missing client', async () => {
    expect(await errorPageFor(authorizeUrl(s, client, await pkce(), { client_id: 'oc_unknown' }))).toContain('unknown client_id')
    expect(await errorPageFor(authorizeUrl(s, client, await pkce(), { client_id: null }))).toContain('client_id is missing')
  })

  test('a redirect_uri given twice', async () => {
    const path = `${authorizeUrl(s, client, await pkce())}&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`
    expect(await errorPageFor(path)).toContain('more than once')
  })
})

describe('the page', () => {
  test('is uncacheable, cannot be framed, runs no script and escapes the client name', async () => {
    const hostile = await registerClient(s, [REDIRECT], '<script>alert("x")</script> & "Friends"')
    const page = await loadPage(s, authorizeUrl(s, hostile, await pkce()))
    expect(page.headers.get('content-type')).toBe('text/html;charset=utf-8')
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(page.headers.get('x-frame-options')).toBe('DENY')
    const csp = page.headers.get('content-security-policy')!
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("form-action 'self' http://127.0.0.1:8765")
    expect(csp).not.toContain('script-src')
    expect(page.html).not.toContain('<script>')
    expect(page.html).toContain('&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#34;Friends&#34;')
    expect(page.cookie).toMatch(/^oauth_browser=[A-Za-z0-9_-]{43}$/)
    const setCookie = page.headers.get('set-cookie')!
    expect(setCookie).toContain('HttpOnly')
    expect(setCookie).toContain('SameSite=Lax')
  })

  test('a wrong password shows the form again, without the password, and issues nothing', async () => {
    const who = await person()
    const page = await loadPage(s, authorizeUrl(s, client, await pkce()))
    const res = await submit(s, page, { email: who.email, password: 'wrong password', org_id: who.orgId })
    expect(res.status).toBe(400)
    const html = await res.text()
    expect(html).toContain('The email address or password is incorrect.')
    expect(html).toContain(`value="${who.email}"`)
    expect(html).not.toContain('wrong password')
    // an unknown address reads the same
    const unknown = await submit(s, page, { email: 'nobody@example.test', password: 'whatever' })
    expect(await unknown.text()).toContain('The email address or password is incorrect.')
    // the same page still works with the right password
    const ok = await submit(s, page, { email: who.email, password: who.password, org_id: who.orgId })
    expect(ok.status).toBe(303)
  })

  test('the org picker needs a sign-in first', async () => {
    const who = await person()
    const page = await loadPage(s, authorizeUrl(s, client, await pkce()))
    const res = await submit(s, page, { org_id: who.orgId })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('Sign in first.')
  })

  test('a form without the CSRF token, or posted from another browser, is refused', async () => {
    const who = await person()
    const page = await loadPage(s, authorizeUrl(s, client, await pkce()))
    const fields = { email: who.email, password: who.password, org_id: who.orgId }
    expect((await submit(s, { ...page, csrf: 'forged' }, fields)).status).toBe(403)
    expect((await submit(s, { ...page, cookie: 'oauth_browser=' + 'A'.repeat(43) }, fields)).status).toBe(403)
    expect((await submit(s, { ...page, cookie: '' }, fields)).status).toBe(403)
    // another page's token does not fit this request
    const other = await loadPage(s, authorizeUrl(s, client, await pkce()), page.cookie)
    expect((await submit(s, { ...page, csrf: other.csrf }, fields)).status).toBe(403)
    expect((await submit(s, page, fields)).status).toBe(303)
  })

  test('the same browser can run two authorizations side by side', async () => {
    const who = await person()
    const a = await loadPage(s, authorizeUrl(s, client, await pkce()))
    const b = await loadPage(s, authorizeUrl(s, client, await pkce()), a.cookie)
    expect((await submit(s, { ...b, cookie: a.cookie }, { email: who.email, password: who.password, org_id: who.orgId })).status).toBe(303)
    expect((await submit(s, a, { email: who.email, password: who.password, org_id: who.orgId })).status).toBe(303)
  })

  test('a finished authorization request cannot be submitted again', async () => {
    const who = await person()
    const page = await loadPage(s, authorizeUrl(s, client, await pkce()))
    const fields = { email: who.email, password: who.password, org_id: who.orgId }
    expect((await submit(s, page, fields)).status).toBe(303)
    const again = await submit(s, page, fields)
    expect(again.status).toBe(400)
    expect(again.headers.get('location')).toBeNull()
  })

  test('an expired authorization request is refused', async () => {
    const who = await person()
    const page = await loadPage(s, authorizeUrl(s, client, await pkce()))
    await s.ctx.sql`update oauth_authorization_requests set expires_at = now() - interval '1 second' where id = ${page.requestId}`
    const res = await submit(s, page, { email: who.email, password: who.password, org_id: who.orgId })
    expect(res.status).toBe(400)
    expect(await res.text()).toContain('expired')
  })

  test('Cancel sends access_denied back to the client, with state and iss', async () => {
    const p = await pkce()
    const page = await loadPage(s, authorizeUrl(s, client, p))
    const res = await submit(s, page, { action: 'deny' })
    expect(res.status).toBe(303)
    const location = new URL(res.headers.get('location')!)
    expect(location.searchParams.get('error')).toBe('access_denied')
    expect(location.searchParams.get('state')).toBe(p.state)
    expect(location.searchParams.get('iss')).toBe(s.origin)
  })

  test('a person in no organization is sent back with access_denied', async () => {
    const who = await person()
    await s.ctx.sql`delete from memberships where user_id = ${who.userId}`
    const page = await loadPage(s, authorizeUrl(s, client, await pkce()))
    const res = await submit(s, page, { email: who.email, password: who.password })
    expect(res.status).toBe(303)
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('access_denied')
  })

  test('a body that is not a form is refused on an error page', async () => {
    const res = await s.fetch('/oauth/authorize', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"request_id":"x"}' })
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toStartWith('text/html')
  })
})
