/**
 * The token endpoint's refusals (RFC 6749 section 5.2 bodies, never the v1 envelope), single
 * use of codes, the current role of the authorizing person, and the rate limit.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { mintCreditCode } from '../../src/credits/service'
import { sha256 } from '../../src/crypto'
import { authorizeAs, callApi, oauthServer, obtainTokens, person, pkce, registerClient, tokenRequest, type Pkce } from './helpers'
import { roomInWindow } from '../helpers/rate-window'

const s = await oauthServer()
afterAll(() => s.stop())
const client = await registerClient(s)
const redirectUri = (client.redirect_uris as string[])[0]!

/** A fresh code for a new person, with the PKCE values it was requested with. */
async function freshCode(): Promise<{ code: string; p: Pkce }> {
  const p = await pkce()
  const callback = await authorizeAs(s, client, await person(), p)
  return { code: callback.searchParams.get('code')!, p }
}

const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
  tokenRequest(s, { grant_type: 'authorization_code', client_id: client.client_id, code, redirect_uri: redirectUri, code_verifier: verifier, ...extra })

function expectOAuthError(res: { status: number; headers: Headers; body: any }, status: number, error: string) {
  expect({ status: res.status, error: res.body.error }).toEqual({ status, error })
  expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description'])
  expect(typeof res.body.error_description).toBe('string')
  expect(res.headers.get('content-type')).toStartWith('application/json')
  expect(res.headers.get('cache-control')).toBe('no-store')
}

describe('authorization codes', () => {
  test('work once: a second exchange is invalid_grant and revokes what the first produced', async () => {
    const { code, p } = await freshCode()
    const first = await exchange(code, p.verifier)
    expect(first.status).toBe(200)
    expect((await callApi(s, first.body.access_token, 'GET', '/v1/whoami')).status).toBe(200)
    expectOAuthError(await exchange(code, p.verifier), 400, 'invalid_grant')
    expect((await callApi(s, first.body.access_token, 'GET', '/v1/whoami')).status).toBe(401)
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: first.body.refresh_token }),
      400,
      'invalid_grant',
    )
  })

  test('a wrong verifier is invalid_grant and burns the code', async () => {
    const { code, p } = await freshCode()
    const wrong = oauth.generateRandomCodeVerifier()
    expectOAuthError(await exchange(code, wrong), 400, 'invalid_grant')
    expectOAuthError(await exchange(code, p.verifier), 400, 'invalid_grant')
  })

  test('a malformed verifier (too short, bad characters, the challenge itself) burns the code too', async () => {
    for (const verifier of ['short', `${'a'.repeat(42)}!`, 'x'.repeat(129)]) {
      const { code, p } = await freshCode()
      expectOAuthError(await exchange(code, verifier), 400, 'invalid_grant')
      expectOAuthError(await exchange(code, p.verifier), 400, 'invalid_grant')
    }
    const { code, p } = await freshCode()
    expectOAuthError(await exchange(code, p.challenge), 400, 'invalid_grant')
  })

  test('oauth4webapi sees the wrong verifier as invalid_grant', async () => {
    const p = await pkce()
    const callback = await authorizeAs(s, client, await person(), p)
    const params = oauth.validateAuthResponse(s.as, client, callback, p.state)
    const res = await oauth.authorizationCodeGrantRequest(s.as, client, oauth.None(), params, redirectUri, oauth.generateRandomCodeVerifier(), s.opts)
    await expect(oauth.processAuthorizationCodeResponse(s.as, client, res)).rejects.toMatchObject({ error: 'invalid_grant', status: 400 })
  })

  test('a redirect_uri different from the authorization request is invalid_grant', async () => {
    const { code, p } = await freshCode()
    expectOAuthError(await exchange(code, p.verifier, { redirect_uri: 'http://127.0.0.1:8765/other' }), 400, 'invalid_grant')
  })

  test('a code of another client is invalid_grant', async () => {
    const other = await registerClient(s)
    const { code, p } = await freshCode()
    const res = await tokenRequest(s, {
      grant_type: 'authorization_code',
      client_id: other.client_id,
      code,
      redirect_uri: redirectUri,
      code_verifier: p.verifier,
    })
    expectOAuthError(res, 400, 'invalid_grant')
  })

  test('a code expires after 10 minutes', async () => {
    const { code, p } = await freshCode()
    const [row] = await s.ctx.sql<
      { ttl: number }[]
    >`select extract(epoch from expires_at - created_at)::int as ttl from oauth_codes where hash = ${sha256(code)}`
    expect(row!.ttl).toBe(600)
    await s.ctx.sql`update oauth_codes set expires_at = now() - interval '1 second' where hash = ${sha256(code)}`
    expectOAuthError(await exchange(code, p.verifier), 400, 'invalid_grant')
  })

  test('only hashes are stored', async () => {
    const { code, p } = await freshCode()
    const tokens = (await exchange(code, p.verifier)).body
    const found = await s.ctx.sql`
      select 1 from oauth_codes where hash::text like ${'%' + code + '%'}
      union all select 1 from oauth_tokens where hash = ${Buffer.from(tokens.access_token)} or hash = ${Buffer.from(tokens.refresh_token)}`
    expect(found.length).toBe(0)
    const hashed = await s.ctx.sql`select kind from oauth_tokens where hash in ${s.ctx.sql([sha256(tokens.access_token), sha256(tokens.refresh_token)])}`
    expect(hashed.map(r => r.kind).sort()).toEqual(['access', 'refresh'])
  })
})

describe('request errors', () => {
  test('missing parameters are invalid_request', async () => {
    const { code, p } = await freshCode()
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'authorization_code', client_id: client.client_id, code, redirect_uri: redirectUri }),
      400,
      'invalid_request',
    )
    expectOAuthError(await tokenRequest(s, { client_id: client.client_id }), 400, 'invalid_request')
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: p.verifier }),
      400,
      'invalid_request',
    )
    expectOAuthError(await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id }), 400, 'invalid_request')
    // none of that spent the code
    expect((await exchange(code, p.verifier)).status).toBe(200)
  })

  test('an unsupported grant type', async () => {
    for (const grant of ['client_credentials', 'password', 'urn:ietf:params:oauth:grant-type:device_code']) {
      expectOAuthError(await tokenRequest(s, { grant_type: grant, client_id: client.client_id }), 400, 'unsupported_grant_type')
    }
  })

  test('an unknown client, or one that tries to authenticate, is invalid_client (401)', async () => {
    expectOAuthError(await tokenRequest(s, { grant_type: 'refresh_token', client_id: 'oc_nobody', refresh_token: 'x' }), 401, 'invalid_client')
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id, client_secret: 's', refresh_token: 'x' }),
      401,
      'invalid_client',
    )
    expectOAuthError(
      await tokenRequest(
        s,
        { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: 'x' },
        { authorization: 'Basic ' + btoa(`${client.client_id}:s`) },
      ),
      401,
      'invalid_client',
    )
  })

  test('a JSON body, an empty body or a repeated parameter is invalid_request, not the v1 envelope', async () => {
    const json = await s.fetch('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'refresh_token' }),
    })
    expectOAuthError({ status: json.status, headers: json.headers, body: await json.json() }, 400, 'invalid_request')
    const empty = await s.fetch('/oauth/token', { method: 'POST' })
    expectOAuthError({ status: empty.status, headers: empty.headers, body: await empty.json() }, 400, 'invalid_request')
    const twice = await s.fetch('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&grant_type=authorization_code',
    })
    const body = (await twice.json()) as any
    expectOAuthError({ status: twice.status, headers: twice.headers, body }, 400, 'invalid_request')
    expect(body.error_description).toBe('grant_type: must be given at most once')
  })

  test('an unknown or expired refresh token is invalid_grant', async () => {
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: 'svc_ort_unknown' }),
      400,
      'invalid_grant',
    )
    const tokens = await obtainTokens(s, client, await person())
    await s.ctx.sql`update oauth_tokens set expires_at = now() - interval '1 second' where hash = ${sha256(tokens.refresh_token!)}`
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: tokens.refresh_token! }),
      400,
      'invalid_grant',
    )
  })

  test('a refresh asking for another scope is invalid_scope', async () => {
    const tokens = await obtainTokens(s, client, await person())
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: tokens.refresh_token!, scope: 'admin' }),
      400,
      'invalid_scope',
    )
  })
})

describe('the role is the current one', () => {
  test('an owner demoted to member gets 403 on an owner-only call at once', async () => {
    const owner = await person('owner')
    const tokens = await obtainTokens(s, client, owner)
    const { code } = await mintCreditCode(s.ctx.sql, 100)
    await s.ctx.sql`update memberships set role = 'member' where org_id = ${owner.orgId} and user_id = ${owner.userId}`
    const res = await callApi(s, tokens.access_token, 'POST', '/v1/credits/redeem', { code })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('forbidden')
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).body.data.role).toBe('member')
    // promoted back: allowed again, on the same token
    await s.ctx.sql`update memberships set role = 'admin' where org_id = ${owner.orgId} and user_id = ${owner.userId}`
    expect((await callApi(s, tokens.access_token, 'POST', '/v1/credits/redeem', { code })).status).toBe(200)
  })

  test('a person removed from the organization: the access token is 401 and the refresh token ends the grant', async () => {
    const who = await person('admin')
    const tokens = await obtainTokens(s, client, who)
    await s.ctx.sql`delete from memberships where org_id = ${who.orgId} and user_id = ${who.userId}`
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(401)
    expectOAuthError(
      await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: tokens.refresh_token! }),
      400,
      'invalid_grant',
    )
    // coming back later does not revive the grant
    await s.ctx.sql`insert into memberships (org_id, user_id, role) values (${who.orgId}, ${who.userId}, 'admin')`
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(401)
    const [grant] = await s.ctx.sql<{ revoked_reason: string }[]>`
      select g.revoked_reason from oauth_grants g join oauth_tokens t on t.grant_id = g.id where t.hash = ${sha256(tokens.refresh_token!)}`
    expect(grant!.revoked_reason).toBe('membership_ended')
  })

  test('an expired access token is 401', async () => {
    const tokens = await obtainTokens(s, client, await person())
    const [row] = await s.ctx.sql<
      { ttl: number }[]
    >`select extract(epoch from expires_at - created_at)::int as ttl from oauth_tokens where hash = ${sha256(tokens.access_token)}`
    expect(row!.ttl).toBe(3600)
    await s.ctx.sql`update oauth_tokens set expires_at = now() - interval '1 second' where hash = ${sha256(tokens.access_token)}`
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(401)
  })
})

describe('rate limit', () => {
  test('past 60 requests a minute from one address: slow_down with Retry-After', async () => {
    await roomInWindow()
    const ip = `192.0.2.${Math.floor(Math.random() * 250)}.${crypto.randomUUID()}`
    const post = () =>
      s.fetchFrom(ip, '/oauth/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', client_id: client.client_id, refresh_token: 'svc_ort_x' }),
      })
    const statuses = await Promise.all(Array.from({ length: 60 }, post).map(async r => (await r).status))
    expect(statuses.every(status => status === 400)).toBe(true)
    const limited = await post()
    const body = (await limited.json()) as any
    expect(limited.status).toBe(400)
    expect(body.error).toBe('slow_down')
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    // another address is not affected
    expect((await tokenRequest(s, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: 'svc_ort_x' })).body.error).toBe('invalid_grant')
  })
})
