/**
 * The DNS answers of inbound authentication (DKIM keys, SPF, DMARC) come from the service's
 * cache (`cachingResolver`, DNS_CACHE_SECONDS: a fixed age, as the resolver reports no TTL for
 * TXT records): a second message from the same domain asks DNS nothing again, and a changed
 * record is seen once the age has passed.
 */
import { expect, test } from 'bun:test'
import { cachingResolver, memoryResolver, type RecordType, type Resolver } from '../../src/dns/resolver'
import { authenticateMessage } from '../../src/mail/inbound/authenticate'
import { rfc822, senderDomain } from '../helpers/mail'

const AGE_MS = 300

test('a second message from the same domain makes no second lookup of any name; a changed record is seen after the cache age', async () => {
  const dns = memoryResolver({})
  const domain = 'cached-sender.example'
  const signer = senderDomain(dns.records, domain)
  const asked: string[] = []
  const counted: Resolver = (name: string, rrtype: RecordType) => {
    asked.push(`${rrtype} ${name.toLowerCase()}`)
    return dns(name, rrtype)
  }
  const resolver = cachingResolver(counted, AGE_MS)
  const message = async (n: number) =>
    new TextEncoder().encode(
      await signer.sign(
        rfc822({ From: `sam@${domain}`, To: 'agent@agents.test.local', Subject: `hello ${n}`, 'Message-ID': `<${n}-${crypto.randomUUID()}@${domain}>` }, 'hi'),
      ),
    )
  const verify = async (n: number) =>
    authenticateMessage(await message(n), { ip: '127.0.0.1', helo: 'mx.sender', mailFrom: `sam@${domain}`, mta: 'mx.test.local' }, resolver)

  const first = await verify(1)
  expect(first.spf.result).toBe('pass')
  expect(first.dkim[0]).toMatchObject({ result: 'pass', domain })
  expect(first.dmarc.result).toBe('pass')
  const names = [...asked]
  expect(names).toContain(`TXT sel._domainkey.${domain}`)
  expect(names).toContain(`TXT ${domain}`)
  expect(names).toContain(`TXT _dmarc.${domain}`)
  expect(new Set(names).size).toBe(names.length)

  const second = await verify(2)
  expect(second).toEqual(first)
  expect(asked).toEqual(names)

  // the domain stops authorizing 127.0.0.1: still pass from the cache, fail once the age has passed
  dns.records[domain] = { TXT: [['v=spf1 -all']] }
  expect((await verify(3)).spf.result).toBe('pass')
  await Bun.sleep(AGE_MS + 50)
  expect((await verify(4)).spf.result).toBe('fail')
  expect(asked.filter(q => q === `TXT ${domain}`)).toHaveLength(2)
})
