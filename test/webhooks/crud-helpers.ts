/** Shared by the endpoint, filter and route API tests: DNS answers for webhook hosts, and domains of an org. */
import { memoryResolver } from '../../src/dns/resolver'
import type { TestApp } from '../helpers/app'
import { expectOk } from '../helpers/envelope'

/** Names the SSRF check resolves: one public, one private, one mixed. */
export function webhookResolver() {
  return memoryResolver({
    'hooks.example.com': { A: ['93.184.216.34'] },
    'v6.example.com': { AAAA: ['2606:2800:220:1:248:1893:25c8:1946'] },
    'internal.example.com': { A: ['10.0.0.1'] },
    'mixed.example.com': { A: ['93.184.216.34', '192.168.1.1'] },
    'metadata.example.com': { AAAA: ['fd00:ec2::254'] },
  })
}

export const HOOK_URL = 'https://hooks.example.com/inbound'

/** A domain claimed by the organization (pending: an endpoint or filter may be scoped to it before verification). */
export async function claimDomain(app: TestApp, key: string): Promise<{ id: string; domain: string }> {
  const domain = `d${crypto.randomUUID().slice(0, 12)}.example.net`
  return expectOk(await app.request('POST', '/v1/domains', { key, body: { domain } }), 201)
}

export const randomId = () => crypto.randomUUID()
