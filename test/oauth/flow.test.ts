/**
 * The authorization code flow end to end over real HTTP, driven by an independent client
 * (oauth4webapi) and a browser-like form post: discovery, registration, sign-in, the code,
 * the exchange, API calls with the token, refresh rotation, reuse detection and revocation.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { authorizeAs, callApi, loadPage, authorizeUrl, obtainTokens, oauthServer, person, pkce, registerClient, submit } from './helpers'

const s = await oauthServer()
afterAll(() => s.stop())

describe('discovery', () => {
  test('authorization server metadata (RFC 8414) as oauth4webapi reads it', () => {
    expect(s.as).toMatchObject({
      issuer: s.origin,
      authorization_endpoint: `${s.origin}/oauth/authorize`,
      token_endpoint: `${s.origin}/oauth/token`,
      revocation_endpoint: `${s.origin}/oauth/revoke`,
      registration_endpoint: `${s.origin}/oauth/register`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      scopes_supported: ['service:api', 'service:read'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
      access_token_expires_in: 3600,
      refresh_token_expires_in: 7776000,
      authorization_code_expires_in: 600,
    })
  })

  test('protected resource metadata (RFC 9728) for the resource /v1 names this issuer', async () => {
    const resource = new URL(`${s.origin}/v1`)
    const rs = await oauth.processResourceDiscoveryResponse(resource, await oauth.resourceDiscoveryRequest(resource, s.opts))
    expect(rs.resource).toBe(`${s.origin}/v1`)
    expect(rs.authorization_servers).toEqual([s.origin])
    expect(rs.scopes_supported).toEqual(['service:api'])
  })

  test('a 401 from the API points at the protected resource metadata', async () => {
    const res = await callApi(s, 'svc_oat_not-a-token', 'GET', '/v1/whoami')
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${s.origin}/.well-known/oauth-protected-resource"`)
  })
})

describe('authorization code flow', () => {
  test('sign in, exchange the code with PKCE, call the API as the person in the chosen organization', async () => {
    const client = await registerClient(s)
    const owner = await person('owner')
    const tokens = await obtainTokens(s, client, owner)
    expect(tokens.token_type).toBe('bearer') // oauth4webapi lowercases it
    expect(tokens.access_token).toMatch(/^svc_oat_[A-Za-z0-9_-]{43}$/)
    expect(tokens.refresh_token).toMatch(/^svc_ort_[A-Za-z0-9_-]{43}$/)
    expect(tokens.expires_in).toBe(3600)
    expect(tokens.scope).toBe('service:api')

    const who = await callApi(s, tokens.access_token, 'GET', '/v1/whoami')
    expect(who.status).toBe(200)
    expect(who.body.data).toMatchObject({ org_id: owner.orgId, user_id: owner.userId, role: 'owner', auth_method: 'oauth' })
    expect(who.body.data.key_id).toMatch(/^[0-9a-f-]{36}$/)
  })

  test('the token response is uncacheable and uses the exact spec fields', async () => {
    const client = await registerClient(s)
    const p = await pkce()
    const callback = await authorizeAs(s, client, await person(), p)
    const res = await s.fetch('/oauth/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: client.client_id,
        code: callback.searchParams.get('code')!,
        redirect_uri: (client.redirect_uris as string[])[0]!,
        code_verifier: p.verifier,
      }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = (await res.json()) as any
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type'])
    expect(body.token_type).toBe('Bearer')
  })

  test('the redirect carries code, state and iss (RFC 9207) and nothing else', async () => {
    const client = await registerClient(s)
    const p = await pkce()
    const callback = await authorizeAs(s, client, await person(), p)
    expect(`${callback.origin}${callback.pathname}`).toBe((client.redirect_uris as string[])[0]!)
    expect([...callback.searchParams.keys()].sort()).toEqual(['code', 'iss', 'state'])
    expect(callback.searchParams.get('iss')).toBe(s.origin)
    expect(callback.searchParams.get('state')).toBe(p.state)
    expect(callback.searchParams.get('code')).toMatch(/^oac_/)
  })

  test('a person in several organizations picks one on the page; the token acts in that one', async () => {
    const first = await person('owner')
    const second = await person('owner')
    const both = await person('admin', [{ orgId: second.orgId, role: 'member' }])
    const client = await registerClient(s)
    const p = await pkce()
    const page = await loadPage(s, authorizeUrl(s, client, p))
    const picker = await submit(s, page, { email: both.email, password: both.password, action: 'allow' })
    expect(picker.status).toBe(200)
    const html = await picker.text()
    expect(html).toContain(`value="${both.orgId}"`)
    expect(html).toContain(`value="${second.orgId}"`)
    expect(html).not.toContain(`value="${first.orgId}"`)
    expect(html).not.toContain(' checked') // two choices: none preselected

    // choosing an organization the person is not in is refused on the page
    const wrong = await submit(s, page, { org_id: first.orgId, action: 'allow' })
    expect(wrong.status).toBe(400)
    expect(await wrong.text()).toContain('Choose one of your organizations')

    const done = await submit(s, page, { org_id: second.orgId, action: 'allow' })
    expect(done.status).toBe(303)
    const params = oauth.validateAuthResponse(s.as, client, new URL(done.headers.get('location')!), p.state)
    const tokens = await oauth.processAuthorizationCodeResponse(
      s.as,
      client,
      await oauth.authorizationCodeGrantRequest(s.as, client, oauth.None(), params, (client.redirect_uris as string[])[0]!, p.verifier, s.opts),
    )
    const who = await callApi(s, tokens.access_token, 'GET', '/v1/whoami')
    expect(who.body.data).toMatchObject({ org_id: second.orgId, user_id: both.userId, role: 'member', auth_method: 'oauth' })
  })

  test('with one organization the picker preselects it', async () => {
    const only = await person('member')
    const client = await registerClient(s)
    const page = await loadPage(s, authorizeUrl(s, client, await pkce()))
    const picker = await submit(s, page, { email: only.email, password: only.password, action: 'allow' })
    const html = await picker.text()
    expect(html).toContain(`value="${only.orgId}" required checked`)
  })
})

describe('refresh tokens', () => {
  test('rotation: a new pair each time, the old access token keeps working until it expires', async () => {
    const client = await registerClient(s)
    const first = await obtainTokens(s, client, await person())
    const second = await oauth.processRefreshTokenResponse(
      s.as,
      client,
      await oauth.refreshTokenGrantRequest(s.as, client, oauth.None(), first.refresh_token!, s.opts),
    )
    expect(second.access_token).not.toBe(first.access_token)
    expect(second.refresh_token).not.toBe(first.refresh_token)
    expect(second.expires_in).toBe(3600)
    expect((await callApi(s, second.access_token, 'GET', '/v1/whoami')).status).toBe(200)
    expect((await callApi(s, first.access_token, 'GET', '/v1/whoami')).status).toBe(200)
    const third = await oauth.processRefreshTokenResponse(
      s.as,
      client,
      await oauth.refreshTokenGrantRequest(s.as, client, oauth.None(), second.refresh_token!, s.opts),
    )
    expect((await callApi(s, third.access_token, 'GET', '/v1/whoami')).body.data.key_id).toBe(
      (await callApi(s, first.access_token, 'GET', '/v1/whoami')).body.data.key_id,
    )
  })

  test('reuse of a rotated refresh token revokes the whole grant', async () => {
    const client = await registerClient(s)
    const first = await obtainTokens(s, client, await person())
    const second = await oauth.processRefreshTokenResponse(
      s.as,
      client,
      await oauth.refreshTokenGrantRequest(s.as, client, oauth.None(), first.refresh_token!, s.opts),
    )

    const reuse = oauth.processRefreshTokenResponse(
      s.as,
      client,
      await oauth.refreshTokenGrantRequest(s.as, client, oauth.None(), first.refresh_token!, s.opts),
    )
    await expect(reuse).rejects.toMatchObject({ error: 'invalid_grant', status: 400 })

    for (const token of [first.access_token, second.access_token]) {
      const res = await callApi(s, token, 'GET', '/v1/whoami')
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe('unauthorized')
    }
    const after = oauth.processRefreshTokenResponse(
      s.as,
      client,
      await oauth.refreshTokenGrantRequest(s.as, client, oauth.None(), second.refresh_token!, s.opts),
    )
    await expect(after).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  test('a refresh token of another client is invalid_grant', async () => {
    const mine = await registerClient(s)
    const theirs = await registerClient(s)
    const tokens = await obtainTokens(s, mine, await person())
    const res = oauth.processRefreshTokenResponse(s.as, theirs, await oauth.refreshTokenGrantRequest(s.as, theirs, oauth.None(), tokens.refresh_token!, s.opts))
    await expect(res).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  test('an access token is not a refresh token and a refresh token is not a bearer credential', async () => {
    const client = await registerClient(s)
    const tokens = await obtainTokens(s, client, await person())
    const res = oauth.processRefreshTokenResponse(s.as, client, await oauth.refreshTokenGrantRequest(s.as, client, oauth.None(), tokens.access_token, s.opts))
    await expect(res).rejects.toMatchObject({ error: 'invalid_grant' })
    expect((await callApi(s, tokens.refresh_token!, 'GET', '/v1/whoami')).status).toBe(401)
  })
})

describe('revocation (RFC 7009)', () => {
  test('revoking the access token revokes the grant: both tokens stop working', async () => {
    const client = await registerClient(s)
    const tokens = await obtainTokens(s, client, await person())
    await oauth.processRevocationResponse(await oauth.revocationRequest(s.as, client, oauth.None(), tokens.access_token, s.opts))
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(401)
    const refresh = oauth.processRefreshTokenResponse(
      s.as,
      client,
      await oauth.refreshTokenGrantRequest(s.as, client, oauth.None(), tokens.refresh_token!, s.opts),
    )
    await expect(refresh).rejects.toMatchObject({ error: 'invalid_grant' })
  })

  test('revoking the refresh token ends the access token too', async () => {
    const client = await registerClient(s)
    const tokens = await obtainTokens(s, client, await person())
    await oauth.processRevocationResponse(await oauth.revocationRequest(s.as, client, oauth.None(), tokens.refresh_token!, s.opts))
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(401)
  })

  test('unknown tokens are 200 too; a missing token is invalid_request', async () => {
    const client = await registerClient(s)
    await oauth.processRevocationResponse(await oauth.revocationRequest(s.as, client, oauth.None(), 'svc_oat_unknown', s.opts))
    const res = await s.fetch('/oauth/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'client_id=' + client.client_id,
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({ error: 'invalid_request', error_description: 'token: is required' })
  })

  test('a client cannot revoke the grant of another client', async () => {
    const mine = await registerClient(s)
    const theirs = await registerClient(s)
    const tokens = await obtainTokens(s, mine, await person())
    await oauth.processRevocationResponse(await oauth.revocationRequest(s.as, theirs, oauth.None(), tokens.access_token, s.opts))
    expect((await callApi(s, tokens.access_token, 'GET', '/v1/whoami')).status).toBe(200)
  })
})
