/** Domains: claim (validation, MX conflicts), list, read, delete, and DNS verification. */
import { describe, expect, test } from 'bun:test'
import { createPublicKey } from 'node:crypto'
import { createOrg, testApp } from '../helpers/app'
import { expectError, expectOk } from '../helpers/envelope'
import { dkimKeyFor, verifiedDomainOwner } from '../../src/domains/service'
import { publish, SMTP_HOSTNAME, testResolver, uniqueDomain } from './helpers'
import { roomInWindow } from '../helpers/rate-window'

const resolver = testResolver()
const { ctx, request } = await testApp({ SMTP_HOSTNAME }, { resolver })

async function claim(key: string, domain = uniqueDomain(), extra: Record<string, unknown> = {}) {
  return expectOk(await request('POST', '/v1/domains', { key, body: { domain, ...extra } }), 201)
}

const byPurpose = (d: { dns_records: { purpose: string }[] }, purpose: string) => d.dns_records.find(r => r.purpose === purpose) as any

describe('claim', () => {
  test('201 with the records to publish, pending and unchecked', async () => {
    const org = await createOrg()
    const name = uniqueDomain()
    const d = await claim(org.key, name)
    expect(d).toMatchObject({ domain: name, status: 'pending', verified_at: null, last_checked_at: null, checks: null })
    expect(Math.abs(Date.parse(d.created_at) - Date.now())).toBeLessThan(60_000)
    expect(d.dns_records.map((r: any) => [r.purpose, r.type, r.name, r.priority, r.status])).toEqual([
      ['verification', 'TXT', `_agent-mail.${name}`, null, 'unchecked'],
      ['mx', 'MX', name, 10, 'unchecked'],
      ['spf', 'TXT', name, null, 'unchecked'],
      ['dkim', 'TXT', expect.stringMatching(new RegExp(`^am\\d{6}\\._domainkey\\.${name.replace(/\./g, '\\.')}$`)), null, 'unchecked'],
      ['dmarc', 'TXT', `_dmarc.${name}`, null, 'unchecked'],
    ])
    expect(byPurpose(d, 'verification').value).toMatch(/^agent-mail-verification=[A-Za-z0-9_-]{32}$/)
    expect(byPurpose(d, 'mx').value).toBe(SMTP_HOSTNAME)
    expect(byPurpose(d, 'spf').value).toBe(`v=spf1 include:${SMTP_HOSTNAME} ~all`)
    expect(byPurpose(d, 'dmarc').value).toBe(`v=DMARC1; p=none; rua=mailto:dmarc@${name}`)
    expect(byPurpose(d, 'dkim').value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]+=*$/)
  })

  test('the DKIM key is RSA-2048, the private half sealed at rest and matching the published one', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    const [row] = await ctx.sql`select dkim_private_sealed, dkim_public, dkim_selector from domains where id = ${d.id}`
    expect(Buffer.from(row!.dkim_private_sealed).toString('utf8')).not.toContain('PRIVATE KEY')
    const pem = ctx.keys.decrypt(row!.dkim_private_sealed)
    expect(pem).toStartWith('-----BEGIN PRIVATE KEY-----')
    const pub = createPublicKey(pem)
    expect(pub.asymmetricKeyDetails?.modulusLength).toBe(2048)
    expect(pub.export({ type: 'spki', format: 'der' }).toString('base64')).toBe(row!.dkim_public)
    expect(byPurpose(d, 'dkim').value).toBe(`v=DKIM1; k=rsa; p=${row!.dkim_public}`)
    expect(JSON.stringify(d)).not.toContain('PRIVATE')
  })

  test('the name is lowercased, its trailing dot dropped; an internationalized name becomes punycode', async () => {
    const org = await createOrg()
    const name = uniqueDomain()
    expect((await claim(org.key, `${name.toUpperCase()}.`)).domain).toBe(name)
    const label = `bücher-${crypto.randomUUID().slice(0, 8)}`
    expect((await claim(org.key, `${label}.example`)).domain).toMatch(/^xn--bcher-.*\.example$/)
  })

  test('each invalid name is a validation_error naming domain', async () => {
    const org = await createOrg()
    const cases: [unknown, RegExp][] = [
      ['192.0.2.10', /not an IP address/],
      ['[2001:db8::1]', /not an IP address/],
      ['2001:db8::1', /not an IP address/],
      ['10.0.0', /not an IP address/],
      ['localhost', /fully qualified/],
      ['com', /fully qualified/],
      ['mail.localhost', /special-use/],
      ['under_score.example.com', /not a valid domain name/],
      ['-bad.example.com', /not a valid domain name/],
      ['bad-.example.com', /not a valid domain name/],
      ['a..example.com', /not a valid domain name/],
      [`${'a'.repeat(64)}.example.com`, /not a valid domain name/],
      ['user@example.com', /not a valid domain name/],
      ['https://example.com', /not a valid domain name/],
      ['   ', /must not be empty/],
      ['agents.test.local', /managed domain/],
      ['x.agents.test.local', /managed domain/],
      ['AGENTS.test.local.', /managed domain/],
      ['', /must not be empty/],
      ['x'.repeat(254), /at most 253/],
      [42, /must be a string/],
    ]
    for (const [domain, reason] of cases) {
      const res = await request('POST', '/v1/domains', { key: org.key, body: { domain } })
      expectError(res, 400, 'validation_error', /^domain: /)
      expect([domain, res.body.error.message]).toEqual([domain, expect.stringMatching(reason)])
    }
    expectError(await request('POST', '/v1/domains', { key: org.key, body: {} }), 400, 'validation_error', 'domain: is required')
    expectError(
      await request('POST', '/v1/domains', { key: org.key, body: { domain: uniqueDomain(), confirmed: 'yes' } }),
      400,
      'validation_error',
      'confirmed: must be a boolean',
    )
    expectError(
      await request('POST', '/v1/domains', { key: org.key, body: { domain: uniqueDomain(), region: 'eu' } }),
      400,
      'validation_error',
      'region: is not a known field',
    )
    expect((await ctx.sql`select count(*)::int as n from domains where org_id = ${org.orgId}`)[0]!.n).toBe(0)
  })

  test('claiming a name twice in one organization is 409 conflict; another organization may claim it', async () => {
    const org = await createOrg()
    const name = uniqueDomain()
    await claim(org.key, name)
    expectError(
      await request('POST', '/v1/domains', { key: org.key, body: { domain: name.toUpperCase() } }),
      409,
      'conflict',
      `domain: ${name} is already claimed by this organization`,
    )
    const other = await createOrg()
    expect((await claim(other.key, name)).status).toBe('pending')
  })

  test('without credentials: 401', async () => {
    expectError(await request('POST', '/v1/domains', { body: { domain: uniqueDomain() } }), 401, 'unauthorized')
  })
})

describe('MX conflict', () => {
  test('MX records of another provider: 409 mx_conflict with the hosts and a remediation; nothing claimed', async () => {
    const org = await createOrg()
    const name = uniqueDomain()
    resolver.records[name] = {
      MX: [
        { exchange: 'alt1.aspmx.l.google.com', priority: 5 },
        { exchange: 'ASPMX.L.GOOGLE.COM.', priority: 1 },
      ],
    }
    const res = await request('POST', '/v1/domains', { key: org.key, body: { domain: name } })
    expectError(res, 409, 'mx_conflict', /^domain: .*aspmx\.l\.google\.com.*confirmed: true/)
    expect(res.body.error.details.mx).toEqual([
      { exchange: 'aspmx.l.google.com', priority: 1 },
      { exchange: 'alt1.aspmx.l.google.com', priority: 5 },
    ])
    expect(res.body.error.details.remediation).toContain('confirmed')
    expect(expectOk(await request('GET', '/v1/domains', { key: org.key }))).toEqual([])
  })

  test('confirmed: true overrides it', async () => {
    const org = await createOrg()
    const name = uniqueDomain()
    resolver.records[name] = { MX: [{ exchange: 'mx.other-provider.example', priority: 10 }] }
    expect((await claim(org.key, name, { confirmed: true })).status).toBe('pending')
  })

  test('confirmed: false is the same as omitting it', async () => {
    const org = await createOrg()
    const name = uniqueDomain()
    resolver.records[name] = { MX: [{ exchange: 'mx.other-provider.example', priority: 10 }] }
    expectError(await request('POST', '/v1/domains', { key: org.key, body: { domain: name, confirmed: false } }), 409, 'mx_conflict')
  })

  test('MX already pointing to us, a null MX, no MX, or a failing lookup: no conflict', async () => {
    const org = await createOrg()
    const ours = uniqueDomain()
    resolver.records[ours] = { MX: [{ exchange: `${SMTP_HOSTNAME.toUpperCase()}.`, priority: 10 }] }
    const nullMx = uniqueDomain()
    resolver.records[nullMx] = { MX: [{ exchange: '', priority: 0 }] }
    const failing = uniqueDomain()
    resolver.failing.add(failing)
    for (const name of [ours, nullMx, uniqueDomain(), failing]) expect((await claim(org.key, name)).domain).toBe(name)
  })
})

describe('read, list, delete', () => {
  test('GET one: the same record; another organization gets 404 not_found', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    expect(expectOk(await request('GET', `/v1/domains/${d.id}`, { key: org.key }))).toEqual(d)
    const other = await createOrg()
    expectError(await request('GET', `/v1/domains/${d.id}`, { key: other.key }), 404, 'not_found', 'domain: not found')
    expectError(await request('GET', `/v1/domains/${crypto.randomUUID()}`, { key: org.key }), 404, 'not_found')
    expectError(await request('GET', '/v1/domains/not-a-uuid', { key: org.key }), 400, 'validation_error', /^id: /)
  })

  test("the list pages newest first and shows only the organization's domains", async () => {
    const org = await createOrg()
    const other = await createOrg()
    await claim(other.key)
    const made = [await claim(org.key), await claim(org.key), await claim(org.key)].map(d => d.id)
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const res = await request('GET', `/v1/domains?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: org.key })
      const page = expectOk(res)
      expect(res.body.meta).toMatchObject({ total: 3, limit: 2 })
      for (const d of page) expect(d.dns_records).toHaveLength(5)
      seen.push(...page.map((d: { id: string }) => d.id))
      cursor = res.body.meta.cursor
    } while (cursor)
    expect(seen).toEqual(made.reverse())

    const foreign = (await request('GET', '/v1/domains?limit=1', { key: other.key })).body.meta.cursor
    expect(foreign).toBeNull()
    const ours = (await request('GET', '/v1/domains?limit=1', { key: org.key })).body.meta.cursor
    expectError(await request('GET', `/v1/domains?cursor=${encodeURIComponent(ours)}`, { key: other.key }), 400, 'validation_error', /^cursor: /)
    expectError(await request('GET', '/v1/domains?limit=0', { key: org.key }), 400, 'validation_error', /^limit: /)
  })

  test('DELETE: 200 {id, deleted: true}, then 404; another organization cannot delete it', async () => {
    const org = await createOrg()
    const other = await createOrg()
    const d = await claim(org.key)
    expectError(await request('DELETE', `/v1/domains/${d.id}`, { key: other.key }), 404, 'not_found')
    expect(expectOk(await request('DELETE', `/v1/domains/${d.id}`, { key: org.key }))).toEqual({ id: d.id, deleted: true })
    expectError(await request('GET', `/v1/domains/${d.id}`, { key: org.key }), 404, 'not_found')
    expectError(await request('DELETE', `/v1/domains/${d.id}`, { key: org.key }), 404, 'not_found')
  })
})

describe('verify', () => {
  const verify = async (key: string, id: string) => expectOk(await request('POST', `/v1/domains/${id}/verify`, { key }))

  test('with every record published: verified, every check ok, and the lookups for mail and signing answer', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    expect(await verifiedDomainOwner(ctx.sql, d.domain)).toBeNull()
    expect(await dkimKeyFor(ctx.sql, ctx.keys, org.orgId, d.domain)).toBeNull()

    publish(resolver, d.dns_records)
    const v = await verify(org.key, d.id)
    expect(v.status).toBe('verified')
    expect(Math.abs(Date.parse(v.verified_at) - Date.now())).toBeLessThan(60_000)
    expect(v.last_checked_at).not.toBeNull()
    for (const purpose of ['verification', 'mx', 'spf', 'dkim', 'dmarc']) expect([purpose, v.checks[purpose].status]).toEqual([purpose, 'ok'])
    expect(v.dns_records.map((r: { status: string }) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok'])
    expect(v.checks.mx.found).toEqual([`10 ${SMTP_HOSTNAME}`])
    expect(expectOk(await request('GET', `/v1/domains/${d.id}`, { key: org.key }))).toEqual(v)

    expect(await verifiedDomainOwner(ctx.sql, `${d.domain.toUpperCase()}.`)).toEqual({ orgId: org.orgId, domainId: d.id })
    const dkim = await dkimKeyFor(ctx.sql, ctx.keys, org.orgId, d.domain)
    expect(dkim!.selector).toBe(byPurpose(d, 'dkim').name.split('.')[0])
    expect(dkim!.privateKeyPem).toStartWith('-----BEGIN PRIVATE KEY-----')
    expect(await dkimKeyFor(ctx.sql, ctx.keys, (await createOrg()).orgId, d.domain)).toBeNull()
  })

  test('nothing published: 200, still pending, every check missing, with what to do', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    const v = await verify(org.key, d.id)
    expect(v).toMatchObject({ status: 'pending', verified_at: null })
    expect(v.last_checked_at).not.toBeNull()
    for (const purpose of ['verification', 'mx', 'spf', 'dkim', 'dmarc']) {
      expect([purpose, v.checks[purpose].status, v.checks[purpose].found]).toEqual([purpose, 'missing', []])
      expect(v.checks[purpose].message.length).toBeGreaterThan(10)
    }
    expect(v.dns_records.map((r: { status: string }) => r.status)).toEqual(['missing', 'missing', 'missing', 'missing', 'missing'])
  })

  test('the verification record alone verifies; the rest is reported for fixing', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    publish(resolver, d.dns_records, ['mx', 'spf', 'dkim', 'dmarc'])
    const v = await verify(org.key, d.id)
    expect(v.status).toBe('verified')
    expect([v.checks.verification.status, v.checks.mx.status, v.checks.dkim.status]).toEqual(['ok', 'missing', 'missing'])
  })

  test('mismatched records: each check says mismatch and the domain stays pending', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    const name = d.domain
    resolver.records[`_agent-mail.${name}`] = { TXT: [['agent-mail-verification=someone-elses-token'], ['google-site-verification=abc']] }
    resolver.records[name] = {
      MX: [{ exchange: 'mx.other-provider.example', priority: 10 }],
      TXT: [['v=spf1 include:_spf.google.com ~all']],
    }
    resolver.records[byPurpose(d, 'dkim').name] = { TXT: [['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong']] }
    resolver.records[`_dmarc.${name}`] = { TXT: [['not a dmarc policy']] }
    const v = await verify(org.key, d.id)
    expect(v.status).toBe('pending')
    expect({
      verification: v.checks.verification.status,
      mx: v.checks.mx.status,
      spf: v.checks.spf.status,
      dkim: v.checks.dkim.status,
      dmarc: v.checks.dmarc.status,
    }).toEqual({ verification: 'mismatch', mx: 'mismatch', spf: 'mismatch', dkim: 'mismatch', dmarc: 'mismatch' })
    expect(v.checks.verification.found).toEqual(['agent-mail-verification=someone-elses-token', 'google-site-verification=abc'])
    expect(v.checks.mx.found).toEqual(['10 mx.other-provider.example'])
    expect(v.checks.spf.message).toContain(`include:${SMTP_HOSTNAME}`)
  })

  test('SPF: two records, and our host preferred below another MX, are mismatches', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    publish(resolver, d.dns_records, ['mx', 'spf'])
    resolver.records[d.domain] = {
      MX: [
        { exchange: SMTP_HOSTNAME, priority: 20 },
        { exchange: 'mx.other-provider.example', priority: 5 },
      ],
      TXT: [[`v=spf1 include:${SMTP_HOSTNAME} ~all`], ['v=spf1 -all']],
    }
    const v = await verify(org.key, d.id)
    expect(v.checks.spf).toMatchObject({ status: 'mismatch', message: expect.stringContaining('2 SPF records') })
    expect(v.checks.mx).toMatchObject({ status: 'mismatch', message: expect.stringContaining('mx.other-provider.example') })
  })

  test('SPF and MX accept a merged record and extra lower-priority hosts', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    publish(resolver, d.dns_records, ['mx', 'spf'])
    resolver.records[d.domain] = {
      MX: [
        { exchange: SMTP_HOSTNAME, priority: 10 },
        { exchange: 'backup.example.net', priority: 50 },
      ],
      TXT: [['some-other=value'], [`v=spf1 ip4:192.0.2.1 +include:${SMTP_HOSTNAME} include:_spf.example.net -all`]],
    }
    const v = await verify(org.key, d.id)
    expect([v.checks.mx.status, v.checks.spf.status]).toEqual(['ok', 'ok'])
  })

  test('a failing DNS server is reported as error per check, never a 500', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    publish(resolver, d.dns_records, ['mx', 'spf'])
    resolver.failing.add(d.domain)
    resolver.failing.add(`_dmarc.${d.domain}`)
    const v = await verify(org.key, d.id)
    expect(v.status).toBe('verified')
    expect([v.checks.verification.status, v.checks.mx.status, v.checks.spf.status, v.checks.dkim.status, v.checks.dmarc.status]).toEqual([
      'ok',
      'error',
      'error',
      'ok',
      'error',
    ])
    expect(v.checks.mx.message).toContain('ESERVFAIL')

    const pending = await claim(org.key)
    publish(resolver, pending.dns_records)
    resolver.failing.add(`_agent-mail.${pending.domain}`)
    const p = await verify(org.key, pending.id)
    expect(p.status).toBe('pending')
    expect(p.checks.verification).toMatchObject({ status: 'error', found: [], message: expect.stringContaining('try again') })
  })

  test('a verified domain stays verified when its records later disappear; the checks show it', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    publish(resolver, d.dns_records)
    const first = await verify(org.key, d.id)
    for (const r of d.dns_records) delete resolver.records[r.name]
    const again = await verify(org.key, d.id)
    expect(again).toMatchObject({ status: 'verified', verified_at: first.verified_at })
    expect(again.checks.verification.status).toBe('missing')
  })

  test('a name verified by another organization: claim is allowed, verify is 409 conflict until it is let go', async () => {
    const holder = await createOrg()
    const d = await claim(holder.key)
    publish(resolver, d.dns_records)
    expect((await verify(holder.key, d.id)).status).toBe('verified')

    const other = await createOrg()
    const mine = await claim(other.key, d.domain)
    expect(mine.status).toBe('pending')
    publish(resolver, mine.dns_records)
    expectError(
      await request('POST', `/v1/domains/${mine.id}/verify`, { key: other.key }),
      409,
      'conflict',
      `domain: ${d.domain} is verified by another organization`,
    )
    expect(await verifiedDomainOwner(ctx.sql, d.domain)).toEqual({ orgId: holder.orgId, domainId: d.id })

    expectOk(await request('DELETE', `/v1/domains/${d.id}`, { key: holder.key }))
    expect(await verifiedDomainOwner(ctx.sql, d.domain)).toBeNull()
    expect((await verify(other.key, mine.id)).status).toBe('verified')
    expect(await verifiedDomainOwner(ctx.sql, d.domain)).toEqual({ orgId: other.orgId, domainId: mine.id })
  })

  test("another organization's domain: 404 not_found", async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    expectError(await request('POST', `/v1/domains/${d.id}/verify`, { key: (await createOrg()).key }), 404, 'not_found')
  })

  test('at most 10 verifications per minute per domain: 429 rate_limit_exceeded with Retry-After', async () => {
    const org = await createOrg()
    const d = await claim(org.key)
    const other = await claim(org.key)
    await roomInWindow()
    for (let i = 0; i < 10; i++) await verify(org.key, d.id)
    const res = await request('POST', `/v1/domains/${d.id}/verify`, { key: org.key })
    expectError(res, 429, 'rate_limit_exceeded', /^domain verification: rate limit of 10 per 60 seconds/)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(res.headers.get('ratelimit-limit')).toBe('10')
    expect(res.headers.get('ratelimit-remaining')).toBe('0')
    // the limit is per domain
    await verify(org.key, other.id)
  })
})
