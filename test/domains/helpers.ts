/** DNS answers for domain tests: an in-memory zone that can also fail, and publishing of a domain's records. */
import { memoryResolver, type RecordType, type Resolver } from '../../src/dns/resolver'

export const SMTP_HOSTNAME = 'mx.mail.test.example'

export type TestResolver = Resolver & {
  records: ReturnType<typeof memoryResolver>['records']
  /** names (lowercase) whose lookups fail as a DNS server failure would */
  failing: Set<string>
}

export function testResolver(): TestResolver {
  const memory = memoryResolver()
  const failing = new Set<string>()
  const resolve = async (name: string, rrtype: RecordType) => {
    if (failing.has(name.toLowerCase())) throw Object.assign(new Error(`querySrv ESERVFAIL ${name}`), { code: 'ESERVFAIL' })
    return memory(name, rrtype)
  }
  return Object.assign(resolve, { records: memory.records, failing })
}

/** A name no other test uses. */
export const uniqueDomain = (label = 'd') => `${label}${crypto.randomUUID().slice(0, 12)}.example.com`

interface Published {
  type: string
  name: string
  value: string
  priority: number | null
  purpose: string
}

/** Splits a TXT value into strings of at most 255 characters, as DNS serves long records. */
const chunks = (value: string) => value.match(/.{1,255}/g) ?? ['']

/** Publishes the records the API asked for (all, or all but `except`). */
export function publish(resolver: TestResolver, records: Published[], except: string[] = []) {
  for (const r of records) {
    if (except.includes(r.purpose)) continue
    const entry = (resolver.records[r.name] ??= {})
    if (r.type === 'MX') (entry.MX ??= []).push({ exchange: r.value, priority: r.priority })
    else (entry.TXT ??= []).push(chunks(r.value))
  }
}
