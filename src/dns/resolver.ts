/**
 * The one DNS resolver of the service, in the shape of `dns.promises.resolve(name, rrtype)` that
 * mailauth expects. Production uses the system resolver, or the servers of DNS_SERVERS; tests
 * use `memoryResolver` with in-memory answers. Missing records throw with code ENOTFOUND or
 * ENODATA, as the system resolver does.
 */
import { promises as dns } from 'node:dns'
import { LRUCache } from 'lru-cache'

export type RecordType = 'A' | 'AAAA' | 'MX' | 'TXT' | 'CNAME' | 'NS' | 'PTR' | 'SOA'
// biome-ignore lint/suspicious/noExplicitAny: the answer's shape depends on the record type
export type Resolver = (name: string, rrtype: RecordType) => Promise<any>

const MAX_CHARACTER_STRING = 255

/**
 * Bun's resolver (1.4.5) returns each <character-string> of a TXT record as a record of its own,
 * so a 2048-bit DKIM key (split in 255-byte strings) arrives as several records and mailauth
 * reads a truncated key. A string of exactly 255 bytes is a split one: join the record that
 * follows it back on. Two separate records would only be joined by mistake if the first ended
 * in a string of exactly 255 bytes, which publishers do not do except when splitting.
 */
export function rejoinTxt(records: string[][]): string[][] {
  const out: string[][] = []
  for (const record of records) {
    const previous = out.at(-1)
    const last = previous?.at(-1)
    if (previous && last !== undefined && Buffer.byteLength(last) === MAX_CHARACTER_STRING) previous.push(...record)
    else out.push([...record])
  }
  return out
}

/** `servers`: `host:port` entries (DNS_SERVERS); empty = the system's resolvers. */
export function systemResolver(servers: string[] = []): Resolver {
  const resolver = new dns.Resolver({ timeout: 3000, tries: 2 })
  if (servers.length) resolver.setServers(servers)
  return async (name, rrtype) => {
    const answers = await resolver.resolve(name, rrtype as 'TXT')
    return rrtype === 'TXT' ? rejoinTxt(answers as string[][]) : answers
  }
}

/**
 * Keeps the answers of `inner` for `maxAgeMs`: inbound mail asks for the same sender domains'
 * SPF, DKIM and DMARC records message after message, and an MTA asks a cache, not the
 * network, each time. "No such record" is kept too (negative caching, RFC 2308); a failure
 * (timeout, SERVFAIL) is not, so the next lookup asks again. Lookups of one name in flight at
 * once share one query. Callers get copies, so none can change what the next one reads. A
 * fixed age rather than each record's TTL: the resolver API does not report TTLs for TXT
 * records, and a short age stays below any TTL in practice.
 */
export function cachingResolver(inner: Resolver, maxAgeMs: number, maxEntries = 10_000): Resolver {
  const cache = new LRUCache<string, Promise<unknown>>({ max: maxEntries, ttl: maxAgeMs })
  return async (name, rrtype) => {
    const key = `${rrtype} ${name.toLowerCase()}`
    let answer = cache.get(key)
    if (!answer) {
      answer = inner(name, rrtype)
      cache.set(key, answer)
      answer.catch(error => {
        if (!isNoRecord(error)) cache.delete(key)
      })
    }
    return structuredClone(await answer)
  }
}

export type MemoryRecords = Record<string, Partial<Record<RecordType, unknown[]>>>

function noData(name: string, code: 'ENOTFOUND' | 'ENODATA'): Error {
  return Object.assign(new Error(`${code} ${name}`), { code, hostname: name })
}

/**
 * Answers from `records` (keyed by lowercase name, then type; TXT values are arrays of strings
 * as in `dns.resolveTxt`). The object stays live: tests add records as they go.
 */
export function memoryResolver(records: MemoryRecords = {}): Resolver & { records: MemoryRecords } {
  const resolve = async (name: string, rrtype: RecordType) => {
    const entry = records[name.toLowerCase().replace(/\.$/, '')]
    if (!entry) throw noData(name, 'ENOTFOUND')
    const answers = entry[rrtype]
    if (!answers?.length) throw noData(name, 'ENODATA')
    return structuredClone(answers)
  }
  return Object.assign(resolve, { records })
}

/** True for the errors that mean "no such record" rather than "DNS failed". */
export function isNoRecord(error: unknown): boolean {
  const code = (error as { code?: string })?.code
  return code === 'ENOTFOUND' || code === 'ENODATA'
}
