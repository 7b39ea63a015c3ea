/**
 * The whole journey of an OAuth client in the order the identity issue names it, with
 * oauth4webapi as the client: 401, resource metadata, server metadata, registration,
 * authorization (signing in on the page), code exchange, a call, refresh, reuse of the old
 * refresh token (the grant is revoked), and revocation of a fresh grant.
 */
import { afterAll, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { authorizeAs, callApi, oauthServer, person, pkce } from './helpers'

const s = await oauthServer()
afterAll(() => s.stop())

test('401 → metadata → register → authorize → exchange → call → refresh → reuse revokes the grant → revoke', async () => {
  // 1. an API call without a credential names the resource metadata
  const first = await callApi(s, 'svc_oat_unknown', 'GET', '/v1/whoami')
  expect(first.status).toBe(401)
  const challenge = first.headers.get('www-authenticate')!
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!

  // 2. resource metadata (RFC 9728) → the authorization server
  const resource = new URL(`${s.origin}/v1`)
  const rs = await oauth.processResourceDiscoveryResponse(resource, await oauth.resourceDiscoveryRequest(resource, s.opts))
  expect(metadataUrl).toBe(`${s.origin}/.well-known/oauth-protected-resource`)
  expect(rs.authorization_servers).toEqual([s.origin])

  // 3. server metadata (RFC 8414)
  const issuer = new URL(rs.authorization_servers![0]!)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...s.opts }))
  expect(as.code_challenge_methods_supported).toEqual(['S256'])

  // 4. dynamic registration (RFC 7591), a public client
  const client = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      { client_name: 'journey', redirect_uris: ['http://127.0.0.1:9/callback'], token_endpoint_auth_method: 'none' },
      s.opts,
    ),
  )

  // 5. authorization: the person signs in on the page and picks the organization
  const who = await person('admin')
  const p = await pkce()
  const callback = await authorizeAs(s, client, who, p)
  const params = oauth.validateAuthResponse(as, client, callback, p.state)

  // 6. code exchange with the PKCE verifier
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, 'http://127.0.0.1:9/callback', p.verifier, s.opts),
  )

  // 7. a call with the access token acts as the person, in the chosen organization, with their role
  const call = await callApi(s, tokens.access_token, 'GET', '/v1/whoami')
  expect(call.body.data).toMatchObject({ org_id: who.orgId, user_id: who.userId, role: 'admin', auth_method: 'oauth' })

  // 8. refresh: a new pair
  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, s.opts),
  )
  expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
  expect((await callApi(s, refreshed.access_token, 'GET', '/v1/whoami')).status).toBe(200)

  // 9. the old refresh token again is reuse: the whole grant is revoked
  const reuse = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, s.opts)
  await expect(oauth.processRefreshTokenResponse(as, client, reuse)).rejects.toThrow()
  expect((await callApi(s, refreshed.access_token, 'GET', '/v1/whoami')).status).toBe(401)

  // 10. revocation of a new grant ends it at once
  const p3 = await pkce()
  const cb3 = await authorizeAs(s, client, who, p3)
  const t3 = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      oauth.validateAuthResponse(as, client, cb3, p3.state),
      'http://127.0.0.1:9/callback',
      p3.verifier,
      s.opts,
    ),
  )
  expect((await callApi(s, t3.access_token, 'GET', '/v1/whoami')).status).toBe(200)
  const revoked = await oauth.revocationRequest(as, client, oauth.None(), t3.refresh_token!, s.opts)
  await oauth.processRevocationResponse(revoked)
  expect((await callApi(s, t3.access_token, 'GET', '/v1/whoami')).status).toBe(401)
})
