/**
 * Webhook URLs must point at the public internet: a customer must not make our worker call
 * private, loopback, link-local, CGNAT or cloud-metadata addresses (SSRF). Names are resolved
 * through the service's resolver and every address they resolve to is checked; the dispatcher
 * then connects to the address that was checked, so DNS cannot change between check and
 * connect. WEBHOOK_ALLOW_LOOPBACK (development, tests) permits 127.0.0.0/8, `localhost` and ::1,
 * and nothing else private.
 */
import { isIP } from 'node:net'
import type { Resolver } from '../dns/resolver'
import { isNoRecord } from '../dns/resolver'
import { errors } from '../errors'

/** IPv4 ranges that are not the public internet (RFC 6890 and friends). */
const V4_BLOCKED: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
]

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => (n << 8) + Number(part), 0) >>> 0
}

const inV4 = (ip: number, [base, bits]: [string, number]) => bits === 0 || ip >>> (32 - bits) === v4ToInt(base) >>> (32 - bits)

/** The 8 16-bit groups of an IPv6 address (with an embedded IPv4 tail expanded). */
function v6Groups(ip: string): number[] {
  let text = ip.toLowerCase().replace(/%.*$/, '')
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (v4) {
    const n = v4ToInt(v4[1]!)
    text = text.slice(0, -v4[1]!.length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const parse = (s: string) => (s ? s.split(':').map(g => parseInt(g, 16)) : [])
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  return [...left, ...new Array(8 - left.length - right.length).fill(0), ...right]
}

export type AddressKind = 'public' | 'loopback' | 'private'

export function classifyAddress(ip: string): AddressKind {
  const family = isIP(ip)
  if (family === 4) {
    const n = v4ToInt(ip)
    if (inV4(n, ['127.0.0.0', 8])) return 'loopback'
    return V4_BLOCKED.some(r => inV4(n, r)) ? 'private' : 'public'
  }
  if (family !== 6) return 'private'
  const g = v6Groups(ip)
  const embeddedV4 = () => `${g[6]! >>> 8}.${g[6]! & 255}.${g[7]! >>> 8}.${g[7]! & 255}`
  if (g.slice(0, 7).every(x => x === 0) && g[7] === 1) return 'loopback' // ::1
  if (g.every(x => x === 0)) return 'private' // ::
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 carry an IPv4 address.
  // Only a mapped address reaches that IPv4 address on this host; through the others an embedded
  // 127.x is not this host: never 'loopback', so never allowed by WEBHOOK_ALLOW_LOOPBACK.
  const translated = (v4: string): AddressKind => (classifyAddress(v4) === 'public' ? 'public' : 'private')
  if (g.slice(0, 5).every(x => x === 0) && g[5] === 0xffff) return classifyAddress(embeddedV4())
  if (g.slice(0, 6).every(x => x === 0)) return translated(embeddedV4())
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every(x => x === 0)) return translated(embeddedV4())
  const first = g[0]!
  // the rest of ::/8 is reserved (IPv4-translated ::ffff:0:a.b.c.d among it); 64:ff9b:1::/48 is local-use NAT64
  if (first === 0) return 'private'
  if (first === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'private'
  if (first === 0x2001 && g[1] === 0) return 'private' // Teredo: tunnels to an obfuscated IPv4 address
  if (first === 0x2001 && g[1] === 2 && g[2] === 0) return 'private' // benchmarking
  if (first === 0x3fff && g[1]! >>> 12 === 0) return 'private' // documentation (3fff::/20)
  if ((first & 0xfe00) === 0xfc00) return 'private' // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80 || (first & 0xffc0) === 0xfec0) return 'private' // link-local, site-local
  if ((first & 0xff00) === 0xff00) return 'private' // multicast
  if (first === 0x2001 && g[1] === 0x0db8) return 'private' // documentation
  if (first === 0x0100 && g.slice(1, 4).every(x => x === 0)) return 'private' // discard-only
  if (first === 0x2002) return translated(`${g[1]! >>> 8}.${g[1]! & 255}.${g[2]! >>> 8}.${g[2]! & 255}`) // 6to4
  return 'public'
}

export interface CheckedUrl {
  url: URL
  /** the address the dispatcher must connect to */
  address: string
  family: 4 | 6
}

async function resolveAll(resolver: Resolver, host: string): Promise<string[]> {
  const answers = await Promise.all(
    (['A', 'AAAA'] as const).map(type =>
      resolver(host, type).catch((e: unknown) => {
        if (isNoRecord(e)) return [] as string[]
        throw e
      }),
    ),
  )
  return answers.flat() as string[]
}

/** Checks a webhook URL and resolves the address to connect to; throws `validation_error` on `url`. */
export async function checkWebhookUrl(raw: string, resolver: Resolver, allowLoopback: boolean, field = 'url'): Promise<CheckedUrl> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw errors.validation(field, 'must be an absolute URL')
  }
  if (url.username || url.password) throw errors.validation(field, 'must not carry credentials')
  if (url.hash) throw errors.validation(field, 'must not have a fragment')
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw errors.validation(field, 'must be an https URL')
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  let addresses: string[]
  if (isIP(host)) addresses = [host]
  else if (host === 'localhost' || host.endsWith('.localhost')) addresses = ['127.0.0.1']
  else {
    try {
      addresses = await resolveAll(resolver, host)
    } catch {
      throw errors.validation(field, `host ${host} could not be resolved`)
    }
    if (!addresses.length) throw errors.validation(field, `host ${host} does not resolve`)
  }
  const kinds = addresses.map(classifyAddress)
  const loopbackOk = allowLoopback && kinds.every(k => k === 'loopback')
  if (!loopbackOk && kinds.some(k => k !== 'public'))
    throw errors.validation(field, 'must be publicly reachable (private, loopback and link-local addresses are refused)')
  if (url.protocol === 'http:' && !loopbackOk) throw errors.validation(field, 'must be an https URL')
  const address = addresses[0]!
  return { url, address, family: isIP(address) === 6 ? 6 : 4 }
}
