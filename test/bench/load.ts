/**
 * A closed-loop HTTP load generator, run as its own process so it does not share an event loop
 * with the server: `bun test/bench/load.ts <url> <connections> <seconds> [authorization]`.
 * Prints one JSON object: requests, errors, requests per second, p50/p99 latency in ms.
 */
import { closedLoop, percentile } from './common'

const [url, connectionsArg = '50', secondsArg = '10', authorization] = process.argv.slice(2)
if (!url) throw new Error('usage: load.ts <url> <connections> <seconds> [authorization]')
const connections = Number(connectionsArg)
const durationMs = Number(secondsArg) * 1000
const headers = authorization ? { authorization } : undefined

const { sends, ok, latencies } = await closedLoop({ connections, durationMs, measureFailures: true }, async () => {
  try {
    const res = await fetch(url!, { headers, keepalive: true })
    await res.arrayBuffer()
    return res.status === 200
  } catch {
    return false
  }
})
console.log(JSON.stringify({ requests: latencies.length, errors: sends - ok, rps: Math.round(latencies.length / (durationMs / 1000)), p50_ms: percentile(latencies, 50), p99_ms: percentile(latencies, 99) }))
