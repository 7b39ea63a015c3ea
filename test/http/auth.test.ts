/** Bearer authentication: who gets 401, and that one organization cannot reach another's objects. */
import { describe, expect, test } from 'bun:test'
import { createOrg, testApp, type TestResponse } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'

const RESOURCE_METADATA = 'http://api.test.local/.well-known/oauth-protected-resource'

function expectUnauthorized(res: TestResponse) {
  expectError(res, 401, 'unauthorized')
  const challenge = res.headers.get('www-authenticate')
  expect(challenge).toMatch(/^Bearer realm="[^"]+", resource_metadata="([^"]+)"$/)
  expect(challenge).toContain(`resource_metadata="${RESOURCE_METADATA}"`)
}

const { request } = await testApp()
const org = await createOrg()

describe('missing or invalid bearer credentials are 401 with WWW-Authenticate', () => {
  test('no Authorization header', async () => {
    expectUnauthorized(await request('GET', '/v1/whoami'))
  })

  test('malformed Authorization headers', async () => {
    for (const authorization of [`Basic ${btoa('a:b')}`, 'Bearer', 'Bearer ', `Bearer ${org.key} extra`, org.key, `Token ${org.key}`]) {
      expectUnauthorized(await request('GET', '/v1/whoami', { headers: { authorization } }))
    }
  })

  test('an unknown key with the right prefix', async () => {
    expectUnauthorized(await request('GET', '/v1/whoami', { key: `svc_${'A'.repeat(43)}` }))
  })

  test('a key with a wrong prefix or absurd length', async () => {
    expectUnauthorized(await request('GET', '/v1/whoami', { key: `sk_${org.key.slice(4)}` }))
    expectUnauthorized(await request('GET', '/v1/whoami', { key: `svc_${'x'.repeat(5000)}` }))
  })

  test('a key differing in one character', async () => {
    const last = org.key.at(-1) === 'A' ? 'B' : 'A'
    expectUnauthorized(await request('GET', '/v1/whoami', { key: org.key.slice(0, -1) + last }))
  })

  test('the scheme name is case-insensitive', async () => {
    expectOk(await request('GET', '/v1/whoami', { headers: { authorization: `bearer ${org.key}` } }))
  })

  test('a 401 changes nothing: a body sent without credentials is not acted on', async () => {
    const res = await request('POST', '/v1/api-keys', { body: { name: 'sneaky' } })
    expectUnauthorized(res)
    const names = expectOk(await request('GET', '/v1/api-keys', { key: org.key })).map((k: { name: string }) => k.name)
    expect(names).not.toContain('sneaky')
  })

  test('credentials are checked before the request is validated', async () => {
    expectUnauthorized(await request('POST', '/v1/api-keys', { body: { bogus: 1 } }))
    expectUnauthorized(await request('GET', '/v1/api-keys?limit=oops'))
    expectUnauthorized(await request('DELETE', '/v1/api-keys/not-a-uuid'))
  })
})

describe('revocation', () => {
  test('a revoked key is refused at once by the app that revoked it', async () => {
    const owner = await createOrg()
    const created = expectOk(await request('POST', '/v1/api-keys', { key: owner.key, body: { name: 'short-lived' } }), 201)
    // warm the credential cache so revocation has to evict it
    expect(expectOk(await request('GET', '/v1/whoami', { key: created.key })).key_id).toBe(created.id)
    const revoked = expectOk(await request('DELETE', `/v1/api-keys/${created.id}`, { key: owner.key }))
    expect(revoked.id).toBe(created.id)
    expect(Date.parse(revoked.revoked_at)).not.toBeNaN()
    expectUnauthorized(await request('GET', '/v1/whoami', { key: created.key }))
    // the key that revoked it still works, and the listing shows the revocation
    const keys = expectOk(await request('GET', '/v1/api-keys', { key: owner.key }))
    expect(keys.find((k: { id: string }) => k.id === created.id).revoked_at).toBe(revoked.revoked_at)
  })

  test('revoking twice keeps the first revocation time', async () => {
    const owner = await createOrg()
    const first = expectOk(await request('DELETE', `/v1/api-keys/${owner.keyId}`, { key: owner.key }))
    expectUnauthorized(await request('DELETE', `/v1/api-keys/${owner.keyId}`, { key: owner.key }))
    const other = await createOrg()
    expectError(await request('DELETE', `/v1/api-keys/${owner.keyId}`, { key: other.key }), 404, 'not_found')
    expect(first.revoked_at).not.toBeNull()
  })

  test('a key can revoke itself', async () => {
    const owner = await createOrg()
    expectOk(await request('DELETE', `/v1/api-keys/${owner.keyId}`, { key: owner.key }))
    expectUnauthorized(await request('GET', '/v1/whoami', { key: owner.key }))
  })
})

describe('organizations are isolated', () => {
  test("another organization's key id is not_found and that key keeps working", async () => {
    const mine = await createOrg()
    const theirs = await createOrg()
    expectError(await request('DELETE', `/v1/api-keys/${theirs.keyId}`, { key: mine.key }), 404, 'not_found')
    expect(expectOk(await request('GET', '/v1/whoami', { key: theirs.key })).org_id).toBe(theirs.orgId)
  })

  test('an unknown id and a foreign id are indistinguishable', async () => {
    const mine = await createOrg()
    const theirs = await createOrg()
    const foreign = await request('DELETE', `/v1/api-keys/${theirs.keyId}`, { key: mine.key })
    const unknown = await request('DELETE', `/v1/api-keys/${crypto.randomUUID()}`, { key: mine.key })
    expect(foreign.status).toBe(unknown.status)
    expect(foreign.body.error).toEqual(unknown.body.error)
  })

  test('a list shows only the own organization', async () => {
    const mine = await createOrg()
    const theirs = await createOrg()
    const ids = expectOk(await request('GET', '/v1/api-keys', { key: mine.key })).map((k: { id: string }) => k.id)
    expect(ids).toEqual([mine.keyId])
    expect(ids).not.toContain(theirs.keyId)
  })
})

describe('every operation in the OpenAPI document', () => {
  test('without a credential: 401 unless marked public, never 401 when public', async () => {
    const doc = (await request('GET', '/v1/openapi')).body
    const checked: string[] = []
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[] }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const url = path.replace(/\{[^}]+\}/g, () => crypto.randomUUID())
        // `security: [{}, {bearer: []}]`: the credential is optional (GraphQL: anonymous callers read the schema)
        const isPublic = Array.isArray(op.security) && (op.security.length === 0 || op.security.some(s => Object.keys(s as object).length === 0))
        // one address per operation, so a growing API never trips the per-address limit here
        const res = await request(method.toUpperCase(), url, { ip: `198.18.${checked.length >> 8}.${checked.length & 255}` })
        checked.push(`${method} ${path} ${res.status}`)
        if (isPublic) expect({ op: `${method} ${path}`, status: res.status }).not.toEqual({ op: `${method} ${path}`, status: 401 })
        else {
          expect({ op: `${method} ${path}`, status: res.status }).toEqual({ op: `${method} ${path}`, status: 401 })
          expectUnauthorized(res)
        }
      }
    }
    expect(checked.length).toBeGreaterThanOrEqual(15)
    // the spine's public operations are marked public (later features may add more)
    const publicOps = Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[] }>>).flatMap(([p, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => Array.isArray(op.security) && !op.security.length)
        .map(([m]) => `${m} ${p}`),
    )
    expect(publicOps).toEqual(
      expect.arrayContaining(['get /v1', 'get /v1/health', 'get /v1/openapi', 'get /.well-known/oauth-protected-resource', 'post /v1/agent/accounts']),
    )
    // and the spine's authenticated ones are not
    for (const op of ['get /v1/whoami', 'get /v1/account', 'get /v1/api-keys', 'post /v1/credits/redeem', 'post /v1/account/webhook-secret/rotate']) {
      expect(publicOps).not.toContain(op)
    }
  })
})
