/**
 * The system resolver against a real DNS server on loopback (the benchmarks' stub, over UDP):
 * a TXT record longer than 255 bytes, as every RSA-2048 DKIM key is, comes back whole.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { defaultResolver } from '../../src/context'
import { rejoinTxt, systemResolver } from '../../src/dns/resolver'
import { testConfig } from '../helpers/app'
import { startDnsStub } from '../helpers/dns-stub'

const key = `v=DKIM1; k=rsa; p=${'M'.repeat(392)}`
const records = { 'sel._domainkey.long.test': { TXT: [[key]] }, 'two.test': { TXT: [['first'], ['second']] } }

let port: number
let server: Bun.Subprocess

beforeAll(async () => {
  ;({ port, server } = await startDnsStub({ answers: records }))
})
afterAll(() => server.kill())

test('a TXT record split into 255-byte strings is one record with all its strings', async () => {
  const txt = (await systemResolver([`127.0.0.1:${port}`])('sel._domainkey.long.test', 'TXT')) as string[][]
  expect(txt).toHaveLength(1)
  expect(txt[0]!.join('')).toBe(key)
})

test('separate short records stay separate', async () => {
  expect(await systemResolver([`127.0.0.1:${port}`])('two.test', 'TXT')).toEqual([['first'], ['second']])
})

test('rejoinTxt joins only after a string of exactly 255 bytes', () => {
  const a = 'a'.repeat(255)
  expect(rejoinTxt([[a], ['b'], ['c']])).toEqual([[a, 'b'], ['c']])
  expect(rejoinTxt([['x'.repeat(254)], ['y']])).toEqual([['x'.repeat(254)], ['y']])
})

test('DNS_CACHE_SECONDS keeps answers for the service; 0 asks the servers every time', async () => {
  // TTL 0: the system resolver (c-ares) keeps answers for their TTL on its own
  const first = await startDnsStub({ ttl: 0, answers: records })
  const env = { DNS_SERVERS: `127.0.0.1:${first.port}` }
  const cached = defaultResolver(testConfig({ ...env, DNS_CACHE_SECONDS: '30' }))
  const uncached = defaultResolver(testConfig({ ...env, DNS_CACHE_SECONDS: '0' }))
  expect(await cached('two.test', 'TXT')).toEqual([['first'], ['second']])
  expect(await uncached('two.test', 'TXT')).toEqual([['first'], ['second']])
  // the record changes
  first.server.kill()
  await first.server.exited
  const second = await startDnsStub({ ttl: 0, port: first.port, answers: { 'two.test': { TXT: [['changed']] } } })
  try {
    expect(await cached('two.test', 'TXT')).toEqual([['first'], ['second']])
    expect(await uncached('two.test', 'TXT')).toEqual([['changed']])
  } finally {
    second.server.kill()
  }
})
