/**
 * A loopback DNS server for benchmarks that run the real service binary, which resolves through
 * `DNS_SERVERS` rather than an in-memory resolver: `bun test/bench/dns-stub.ts <port>` answers
 * UDP queries from the records in BENCH_DNS (JSON, the MemoryRecords shape of src/dns/resolver:
 * lowercase name -> type -> answers; TXT answers are arrays of strings, A answers dotted quads).
 * An unknown name is NXDOMAIN, a known name without records of the type an empty answer. No
 * recursion, no TCP, no EDNS: the answers fit in 512 bytes. Every answer has a TTL of
 * BENCH_DNS_TTL seconds (default 300). Prints `ready` once it listens; runs until killed.
 */
import type { MemoryRecords } from '../../src/dns/resolver'

const port = Number(process.argv[2])
if (!Number.isInteger(port)) throw new Error('usage: dns-stub.ts <port>')
const records = JSON.parse(process.env.BENCH_DNS ?? '{}') as MemoryRecords
const ttl = Number(process.env.BENCH_DNS_TTL ?? 300)
const TYPES: Record<number, 'A' | 'TXT' | 'MX' | 'AAAA' | 'CNAME' | 'NS' | 'PTR' | 'SOA'> = {
  1: 'A',
  2: 'NS',
  5: 'CNAME',
  6: 'SOA',
  12: 'PTR',
  15: 'MX',
  16: 'TXT',
  28: 'AAAA',
}
const encoder = new TextEncoder()

function rdata(type: string, answer: unknown): Uint8Array | null {
  if (type === 'A' && typeof answer === 'string') return Uint8Array.from(answer.split('.').map(Number))
  if (type === 'TXT' && Array.isArray(answer)) {
    // each string of the record as <character-string>s of at most 255 bytes
    const parts: number[] = []
    for (const s of answer as string[]) {
      const bytes = encoder.encode(s)
      for (let i = 0; i < bytes.length || i === 0; i += 255) {
        const chunk = bytes.subarray(i, i + 255)
        parts.push(chunk.length, ...chunk)
      }
    }
    return Uint8Array.from(parts)
  }
  return null
}

function answer(query: Uint8Array): Uint8Array | null {
  if (query.length < 12) return null
  const view = new DataView(query.buffer, query.byteOffset, query.byteLength)
  if (view.getUint16(4) !== 1) return null
  // the question: labels up to the root, then QTYPE and QCLASS
  const labels: string[] = []
  let at = 12
  while (at < query.length && query[at] !== 0) {
    const len = query[at]!
    labels.push(new TextDecoder().decode(query.subarray(at + 1, at + 1 + len)))
    at += 1 + len
  }
  const questionEnd = at + 5
  if (questionEnd > query.length) return null
  const qtype = view.getUint16(at + 1)
  const entry = records[labels.join('.').toLowerCase()]
  const type = TYPES[qtype]
  const rrs = ((entry && type ? entry[type] : undefined) ?? []).map(a => rdata(type!, a)).filter((r): r is Uint8Array => r !== null)

  const size = questionEnd + rrs.reduce((n, r) => n + 12 + r.length, 0)
  const out = new Uint8Array(size)
  const o = new DataView(out.buffer)
  o.setUint16(0, view.getUint16(0)) // id
  // QR, AA, the client's RD, RA; rcode 3 (NXDOMAIN) for a name we do not know
  o.setUint16(2, 0x8000 | 0x0400 | (query[2]! & 0x01 ? 0x0100 : 0) | 0x0080 | (entry ? 0 : 3))
  o.setUint16(4, 1)
  o.setUint16(6, rrs.length)
  out.set(query.subarray(12, questionEnd), 12)
  let p = questionEnd
  for (const r of rrs) {
    o.setUint16(p, 0xc00c) // the name: a pointer to the question's
    o.setUint16(p + 2, qtype)
    o.setUint16(p + 4, 1) // IN
    o.setUint32(p + 6, ttl)
    o.setUint16(p + 10, r.length)
    out.set(r, p + 12)
    p += 12 + r.length
  }
  return out
}

await Bun.udpSocket({
  hostname: '127.0.0.1',
  port,
  socket: {
    data(socket, data, fromPort, fromAddress) {
      const reply = answer(new Uint8Array(data))
      if (reply) socket.send(reply, fromPort, fromAddress)
    },
  },
})
console.log('ready')
