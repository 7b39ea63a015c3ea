/**
 * The benchmarks' DNS stub (test/bench/dns-stub.ts) as a process on a free loopback port, for a
 * service that resolves through DNS_SERVERS (the system resolver, or a separate service process).
 * Unknown names are NXDOMAIN at once.
 */
import type { MemoryRecords } from '../../src/dns/resolver'

export interface DnsStub {
  port: number
  server: Bun.Subprocess<'ignore', 'pipe', 'inherit'>
}

/** The stub on `port` (a free one by default), answering `answers` with a TTL of `ttl` seconds; resolves once it listens. */
export async function startDnsStub(opts: { ttl?: number; answers?: MemoryRecords; port?: number } = {}): Promise<DnsStub> {
  let port = opts.port
  if (port === undefined) {
    const probe = await Bun.udpSocket({ hostname: '127.0.0.1', port: 0 })
    port = probe.port
    probe.close()
  }
  const env = { ...process.env, BENCH_DNS: JSON.stringify(opts.answers ?? {}), BENCH_DNS_TTL: String(opts.ttl ?? 300) }
  const server = Bun.spawn([process.execPath, `${import.meta.dir}/../bench/dns-stub.ts`, String(port)], {
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = server.stdout.getReader()
  const { value } = await reader.read()
  reader.releaseLock()
  if (!new TextDecoder().decode(value).startsWith('ready')) throw new Error('dns stub did not start')
  return { port, server }
}
