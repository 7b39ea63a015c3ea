/** `bun run admin domain verify`: verified without DNS, claiming first when needed. */
import { describe, expect, test } from 'bun:test'
import { UsageError, verifyDomainCommand } from '../../src/admin/commands'
import { ServerKeys } from '../../src/crypto'
import { dkimKeyFor, verifiedDomainOwner } from '../../src/domains/service'
import { createOrg, TEST_SECRET, testApp, testSql } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { SMTP_HOSTNAME, testResolver, uniqueDomain } from './helpers'

const sql = await testSql()
const keys = new ServerKeys(TEST_SECRET)
const config = { MANAGED_DOMAIN: 'agents.test.local', SMTP_HOSTNAME }
const resolver = testResolver()
const { request } = await testApp({ SMTP_HOSTNAME }, { resolver })

describe('domain verify', () => {
  test('an unclaimed name is claimed and verified without DNS, even with MX records elsewhere', async () => {
    const org = await createOrg()
    const name = uniqueDomain()
    resolver.records[name] = { MX: [{ exchange: 'aspmx.l.google.com', priority: 1 }] }
    const out = await verifyDomainCommand(sql, keys, config, org.orgId, name.toUpperCase())
    expect(out).toMatchObject({ org_id: org.orgId, domain: name, status: 'verified' })
    expect(out.dns_records).toHaveLength(5)
    expect(await verifiedDomainOwner(sql, name)).toEqual({ orgId: org.orgId, domainId: out.id })
    expect((await dkimKeyFor(sql, keys, org.orgId, name))!.privateKeyPem).toStartWith('-----BEGIN PRIVATE KEY-----')
    // the API shows the same domain
    const d = expectOk(await request('GET', `/v1/domains/${out.id}`, { key: org.key }))
    expect(d).toMatchObject({ status: 'verified', verified_at: out.verified_at, checks: null })
  })

  test('a pending claim made through the API is verified; running it again changes nothing', async () => {
    const org = await createOrg()
    const claimed = expectOk(await request('POST', '/v1/domains', { key: org.key, body: { domain: uniqueDomain() } }), 201)
    const first = await verifyDomainCommand(sql, keys, config, org.orgId, claimed.domain)
    expect(first).toMatchObject({ id: claimed.id, status: 'verified' })
    expect(first.dns_records).toEqual(claimed.dns_records.map((r: object) => ({ ...r, status: 'unchecked' })))
    const again = await verifyDomainCommand(sql, keys, config, org.orgId, claimed.domain)
    expect(again).toEqual(first)
  })

  test('a name another organization holds verified is refused, and nothing is claimed', async () => {
    const holder = await createOrg()
    const name = uniqueDomain()
    await verifyDomainCommand(sql, keys, config, holder.orgId, name)
    const other = await createOrg()
    await expect(verifyDomainCommand(sql, keys, config, other.orgId, name)).rejects.toThrow(`domain: ${name} is verified by another organization`)
    expect(expectOk(await request('GET', '/v1/domains', { key: other.key }))).toEqual([])
    // through the API the same name can be claimed but not verified
    const mine = expectOk(await request('POST', '/v1/domains', { key: other.key, body: { domain: name } }), 201)
    expectError(await request('POST', `/v1/domains/${mine.id}/verify`, { key: other.key }), 409, 'conflict')
  })

  test('usage errors: missing arguments, an unknown organization, an invalid or managed name', async () => {
    const org = await createOrg()
    const cases: [string | undefined, string | undefined, RegExp][] = [
      [undefined, undefined, /^org_id: is required/],
      [org.orgId, undefined, /^domain: is required/],
      [crypto.randomUUID(), uniqueDomain(), /^org_id: no organization/],
      ['not-a-uuid', uniqueDomain(), /^org_id: no organization/],
      [org.orgId, '192.0.2.1', /^domain: must be a domain name, not an IP address/],
      [org.orgId, 'x.agents.test.local', /^domain: is the managed domain/],
    ]
    for (const [orgId, domain, message] of cases) {
      const error = await verifyDomainCommand(sql, keys, config, orgId, domain).catch(e => e)
      expect(error).toBeInstanceOf(UsageError)
      expect(error.message).toMatch(message)
    }
  })
})
