/**
 * A closed-loop HTTP load generator, run as its own process so it does not share an event loop
 * with the server: `bun test/bench/load.ts <url> <connections> <seconds> [authorization]`.
 * Prints one JSON object: requests, errors, requests per second, p50/p99 latency in ms.
 */
const [url, connectionsArg = '50', secondsArg = '10', authorization] = process.argv.slice(2)
if (!url) throw new Error('usage: load.ts <url> <connections> <seconds> [authorization]')
const connections = Number(connectionsArg)
const durationMs = Number(secondsArg) * 1000
const headers = authorization ? { authorization } : undefined

const latencies: number[] = []
let errors = 0
const warmupEnd = performance.now() + 1000
const end = warmupEnd + durationMs

async function client() {
  while (performance.now() < end) {
    const started = performance.now()
    try {
      const res = await fetch(url!, { headers, keepalive: true })
      await res.arrayBuffer()
      if (res.status !== 200) errors++
    } catch {
      errors++
    }
    if (started >= warmupEnd) latencies.push(performance.now() - started)
  }
}

await Promise.all(Array.from({ length: connections }, client))
latencies.sort((a, b) => a - b)
const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0) * 100) / 100
console.log(JSON.stringify({ requests: latencies.length, errors, rps: Math.round(latencies.length / (durationMs / 1000)), p50_ms: pct(50), p99_ms: pct(99) }))
export {}
