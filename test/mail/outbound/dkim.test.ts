/** Signing keys (managed domain, verified domains), the signature itself, and the records we answer locally. */
import { describe, expect, test } from 'bun:test'
import { memoryResolver } from '../../../src/dns/resolver'
import { markDomainVerified, claimDomain, generateDkimKey } from '../../../src/domains/service'
import { buildMime } from '../../../src/mail/outbound/build'
import { dkimSign, forgetSigningKeys, SIGNED_HEADERS, signingKeyFor } from '../../../src/mail/outbound/dkim'
import { localResolver } from '../../../src/mail/outbound/local-resolver'
import { managedDkimKey, managedDkimRecord } from '../../../src/mail/outbound/managed-key'
import { RelayError } from '../../../src/mail/outbound/relay'
import { createOrg, TEST_SECRET, testApp, testSql } from '../../helpers/app'
import { fullMessage, verifyDkim } from './message'
import { testDatabase } from '../../helpers/database'

const unique = (label: string) => `${label}-${crypto.randomUUID().slice(0, 8)}`

describe('the managed domain key', () => {
  test('created once under concurrency: five first uses at once make one row, one key', async () => {
    const domain = `${unique('managed')}.test.local`
    const { ctx } = await testApp({ MANAGED_DOMAIN: domain }, { resolver: memoryResolver({}) })
    const org = await createOrg()
    // managedDkimKey itself, since signingKeyFor shares one fetch between concurrent callers
    const keys = await Promise.all(Array.from({ length: 5 }, () => managedDkimKey(ctx.sql, ctx.keys, domain)))
    const sql = await testSql()
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from managed_dkim_keys where domain = ${domain}`
    expect(row?.n).toBe(1)
    expect(new Set(keys.map(k => k!.privateKeyPem)).size).toBe(1)
    expect(new Set(keys.map(k => k!.selector)).size).toBe(1)
    expect(keys[0]).toMatchObject({ domain, selector: expect.stringMatching(/^am\d{6}$/) })
    expect(await signingKeyFor(ctx, org.orgId, domain)).toMatchObject({ domain, selector: keys[0]!.selector, privateKeyPem: keys[0]!.privateKeyPem })
  })

  test('stored sealed, never as PEM', async () => {
    const domain = `${unique('sealed')}.test.local`
    const { ctx } = await testApp({ MANAGED_DOMAIN: domain })
    const key = await signingKeyFor(ctx, (await createOrg()).orgId, domain)
    const sql = await testSql()
    const [row] = await sql<{ private_sealed: Buffer }[]>`select private_sealed from managed_dkim_keys where domain = ${domain}`
    expect(Buffer.from(row!.private_sealed).toString('latin1')).not.toContain('PRIVATE KEY')
    expect(ctx.keys.decrypt(row!.private_sealed)).toBe(key!.privateKeyPem)
  })

  test('any organization signs managed-domain mail with it; the name is matched case-insensitively', async () => {
    const { ctx } = await testApp()
    const a = await signingKeyFor(ctx, (await createOrg()).orgId, ctx.config.MANAGED_DOMAIN)
    const b = await signingKeyFor(ctx, (await createOrg()).orgId, ctx.config.MANAGED_DOMAIN.toUpperCase() + '.')
    expect(b).toEqual(a)
    // mail the service sends on its own behalf
    expect(await signingKeyFor(ctx, null, ctx.config.MANAGED_DOMAIN)).toEqual(a)
  })

  test('its public record verifies what it signs', async () => {
    const { ctx } = await testApp()
    const org = await createOrg()
    const managed = ctx.config.MANAGED_DOMAIN
    const raw = await dkimSign(buildMime(fullMessage(`bot@${managed}`)), (await signingKeyFor(ctx, org.orgId, managed))!)
    const record = await managedDkimRecord(ctx.sql, ctx.keys, managed)
    expect(record.name).toBe(`${record.selector}._domainkey.${managed}`)
    expect(record.value).toStartWith('v=DKIM1; k=rsa; p=')
    const [dkim] = await verifyDkim(raw, { [record.name]: record.value })
    expect(dkim?.status.result).toBe('pass')
  })

  test('`bun run admin managed-dkim` prints {selector, name, value} of the same key', async () => {
    const db = await testDatabase()
    if (db.kind !== 'postgres') return // PGlite serves one process at a time
    const domain = `${unique('cli')}.test.local`
    const proc = Bun.spawn([process.execPath, 'src/admin/cli.ts', 'managed-dkim'], {
      cwd: `${import.meta.dir}/../../..`,
      env: { ...process.env, DATABASE_URL: db.url, SECRET_KEY: TEST_SECRET, MANAGED_DOMAIN: domain, LOG_LEVEL: 'silent' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    expect(err).toBe('')
    expect(code).toBe(0)
    const printed = JSON.parse(out)
    expect(Object.keys(printed).sort()).toEqual(['name', 'selector', 'value'])
    const { ctx } = await testApp({ MANAGED_DOMAIN: domain })
    expect(printed).toEqual(await managedDkimRecord(ctx.sql, ctx.keys, domain))
  })
})

describe('verified domain keys', () => {
  test("a domain the organization holds verified signs with that domain's key", async () => {
    const { ctx } = await testApp()
    const org = await createOrg()
    const domain = `${unique('own')}.example.com`
    const row = await markDomainVerified(await testSql(), ctx.keys, ctx.config.MANAGED_DOMAIN, org.orgId, domain)
    const key = await signingKeyFor(ctx, org.orgId, domain)
    expect(key).toMatchObject({ domain, selector: row.dkim_selector })
    const raw = await dkimSign(buildMime(fullMessage(`news@${domain}`)), key!)
    const [dkim] = await verifyDkim(raw, { [`${row.dkim_selector}._domainkey.${domain}`]: `v=DKIM1; k=rsa; p=${row.dkim_public}` })
    expect(dkim).toMatchObject({ signingDomain: domain, status: { result: 'pass' } })
  })

  test('no key for a pending domain, for another organization’s domain, or for a domain nobody holds', async () => {
    const { ctx } = await testApp({}, { resolver: memoryResolver({}) })
    const owner = await createOrg()
    const other = await createOrg()
    const verified = `${unique('theirs')}.example.com`
    await markDomainVerified(await testSql(), ctx.keys, ctx.config.MANAGED_DOMAIN, owner.orgId, verified)
    const pending = `${unique('pending')}.example.com`
    await claimDomain(ctx.sql, ctx, other.orgId, { domain: pending, confirmed: true })
    expect(await signingKeyFor(ctx, other.orgId, verified)).toBeNull()
    expect(await signingKeyFor(ctx, null, verified)).toBeNull()
    expect(await signingKeyFor(ctx, other.orgId, pending)).toBeNull()
    expect(await signingKeyFor(ctx, other.orgId, `${unique('nobody')}.example.com`)).toBeNull()
  })
})

describe('the key cache', () => {
  test('a key is read once; forgetSigningKeys drops it', async () => {
    const { ctx } = await testApp()
    const org = await createOrg()
    const domain = `${unique('cached')}.example.com`
    await markDomainVerified(await testSql(), ctx.keys, ctx.config.MANAGED_DOMAIN, org.orgId, domain)
    const first = await signingKeyFor(ctx, org.orgId, domain)
    expect(first!.privateKeyPem).toStartWith('-----BEGIN')
    expect(await signingKeyFor(ctx, org.orgId, domain.toUpperCase())).toBe(first)
    // the key is per organization: another one holding nothing gets none
    expect(await signingKeyFor(ctx, (await createOrg()).orgId, domain)).toBeNull()
    forgetSigningKeys(ctx, org.orgId, domain)
    const again = await signingKeyFor(ctx, org.orgId, domain)
    expect(again).not.toBe(first)
    expect(again).toEqual(first)
  })

  test('"no key" is not cached: a domain verified a moment later signs at once', async () => {
    const { ctx } = await testApp()
    const org = await createOrg()
    const domain = `${unique('later')}.example.com`
    expect(await signingKeyFor(ctx, org.orgId, domain)).toBeNull()
    const row = await markDomainVerified(await testSql(), ctx.keys, ctx.config.MANAGED_DOMAIN, org.orgId, domain)
    expect(await signingKeyFor(ctx, org.orgId, domain)).toMatchObject({ domain, selector: row.dkim_selector })
  })
})

describe('dkimSign', () => {
  test("makes the very bytes mailauth's dkimSign makes (the key parsed once, the same canonicalization and header)", async () => {
    const { dkimSign: mailauthSign } = await import('mailauth/lib/dkim/sign')
    const key = { domain: 'agents.test.local', selector: 'am202601', privateKeyPem: (await generateDkimKey()).privateKeyPem }
    const signTime = new Date('2026-01-02T03:04:05Z')
    const messages = [
      buildMime(fullMessage('agent@agents.test.local')),
      buildMime(
        fullMessage('agent@agents.test.local', {
          attachments: [],
          html: undefined,
          jsonPart: undefined,
          text: '  trailing  spaces \t\n\n\n',
          subject: 'x'.repeat(300),
        }),
      ),
      'From: a@agents.test.local\r\nTo: b@example.com\r\nSubject: no body\r\n\r\n',
    ]
    for (const raw of messages) {
      const theirs = await mailauthSign(raw, {
        canonicalization: 'relaxed/relaxed',
        headerList: SIGNED_HEADERS,
        signTime,
        signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }],
      } as never)
      expect(await dkimSign(raw, key, signTime)).toBe(theirs.signatures + raw)
      expect(await dkimSign(raw, key, signTime)).toBe(theirs.signatures + raw)
    }
  })

  test('refuses a message with bare LF line endings', async () => {
    const { ctx } = await testApp()
    const key = (await signingKeyFor(ctx, (await createOrg()).orgId, ctx.config.MANAGED_DOMAIN))!
    await expect(dkimSign('From: a@b.example\nSubject: x\n\nbody\n', key)).rejects.toThrow(/CRLF/)
  })

  test('an unusable private key is outbound_key_invalid', async () => {
    const raw = buildMime(fullMessage('bot@example.com'))
    const error = await dkimSign(raw, {
      domain: 'example.com',
      selector: 's1',
      privateKeyPem: '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n',
    }).catch(e => e)
    expect(error).toBeInstanceOf(RelayError)
    expect(error).toMatchObject({ code: 'outbound_key_invalid', maybeSent: false })
  })
})

describe('the local resolver', () => {
  test("answers our own selectors from the database and everything else from the service's resolver", async () => {
    const dns = memoryResolver({ 'example.org': { TXT: [['v=spf1 -all']] } })
    const { ctx } = await testApp({}, { resolver: dns })
    const org = await createOrg()
    const managed = ctx.config.MANAGED_DOMAIN
    const record = await managedDkimRecord(ctx.sql, ctx.keys, managed)
    const resolve = localResolver(ctx)
    expect((await resolve(record.name.toUpperCase(), 'TXT')).map((chunks: string[]) => chunks.join(''))).toEqual([record.value])
    expect(await resolve('example.org', 'TXT')).toEqual([['v=spf1 -all']])
    // a selector we do not sign with, and a pending domain's key, are left to DNS
    expect(resolve(`nope._domainkey.${managed}`, 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' })
    const pending = await claimDomain(ctx.sql, ctx, org.orgId, { domain: `${unique('pend')}.example.com`, confirmed: true })
    expect(resolve(`${pending.dkim_selector}._domainkey.${pending.name}`, 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' })
  })
})
