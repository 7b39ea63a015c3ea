/**
 * The system resolver against a real DNS server on loopback (the benchmarks' stub, over UDP):
 * a TXT record longer than 255 bytes, as every RSA-2048 DKIM key is, comes back whole.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rejoinTxt, systemResolver } from '../../src/dns/resolver'

const key = `v=DKIM1; k=rsa; p=${'M'.repeat(392)}`
let server: Bun.Subprocess
let port: number

beforeAll(async () => {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  port = probe.port
  probe.stop(true)
  const records = { 'sel._domainkey.long.test': { TXT: [[key]] }, 'two.test': { TXT: [['first'], ['second']] } }
  server = Bun.spawn([process.execPath, `${import.meta.dir}/../bench/dns-stub.ts`, String(port)], { env: { ...process.env, BENCH_DNS: JSON.stringify(records) }, stdout: 'ignore' })
  await Bun.sleep(300)
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
