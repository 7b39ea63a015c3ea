/**
 * A closed-loop HTTP POST load generator, run as its own process:
 * `bun test/bench/post-load.ts <url> <connections> <seconds> <body-bytes>`. Each of the
 * connections POSTs a JSON body of about `body-bytes` bytes, one after another, for 1 s of
 * warm-up plus `seconds`; at most 1,000,000 requests. Prints one JSON object: requests (after
 * warm-up), errors, requests per second, p50/p99 latency in ms.
 */
import { closedLoop, percentile } from './common'

const [url, connectionsArg = '8', secondsArg = '5', bytesArg = '4096'] = process.argv.slice(2)
if (!url) throw new Error('usage: post-load.ts <url> <connections> <seconds> <body-bytes>')
const connections = Number(connectionsArg)
const durationMs = Number(secondsArg) * 1000
const body = JSON.stringify({ event: 'baseline', padding: 'x'.repeat(Math.max(0, Number(bytesArg) - 40)) })
const MAX_REQUESTS = 1_000_000

const { sends, ok, latencies } = await closedLoop({ connections, durationMs, maxSends: MAX_REQUESTS, measureFailures: true }, async () => {
  try {
    const res = await fetch(url!, { method: 'POST', body, headers: { 'content-type': 'application/json' }, keepalive: true })
    await res.arrayBuffer()
    return res.status === 200
  } catch {
    return false
  }
})
console.log(
  JSON.stringify({
    requests: latencies.length,
    errors: sends - ok,
    rps: Math.round(latencies.length / (durationMs / 1000)),
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
  }),
)
