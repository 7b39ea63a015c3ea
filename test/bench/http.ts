/**
 * HTTP section of `make bench`: authenticated GET /v1/whoami on the real PostgreSQL against a
 * bare Bun.serve "hello" measured in the same run, each driven by a separate load process
 * (load.ts). Target on a 2-core machine: whoami at least 1/4 of the baseline's throughput, p99
 * under 10 ms at 50 connections.
 */
import type { Sql } from '../../src/db/client'
import { createOrgCommand, setApiLimitCommand } from '../../src/admin/commands'
import { freePort, runJson, startService, stopAll, waitForHttp } from './common'

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const dir = import.meta.dir

interface Result { requests: number; errors: number; rps: number; p50_ms: number; p99_ms: number }

function load(url: string, authorization?: string): Promise<Result> {
  return runJson<Result>([process.execPath, `${dir}/load.ts`, url, String(CONNECTIONS), String(SECONDS), ...(authorization ? [authorization] : [])])
}

export async function httpBench(sql: Sql, dbUrl: string): Promise<void> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'bench' })
  // The plan's 3000/min would turn the run into a 429 benchmark; the limiter still runs.
  await setApiLimitCommand(sql, org.org_id, '100000000')

  console.log(`bench: ${CONNECTIONS} connections, ${SECONDS} s per target after 1 s of warm-up, ${navigator.hardwareConcurrency} cores\n`)

  const children: Bun.Subprocess[] = []
  try {
    const helloPort = await freePort()
    children.push(Bun.spawn([process.execPath, `${dir}/hello.ts`, String(helloPort)], { stdout: 'ignore' }))
    await waitForHttp(`http://127.0.0.1:${helloPort}/`)
    const baseline = await load(`http://127.0.0.1:${helloPort}/`)

    const apiPort = await freePort()
    // the request log is part of the cost measured: one JSON line per request, to /dev/null
    await startService(
      children,
      { DATABASE_URL: dbUrl, PORT: String(apiPort), HOST: '127.0.0.1', ROLES: 'api', SECRET_KEY: 'bench-secret-0123456789abcdef0123456789', LOG_LEVEL: 'info' },
      { profile: false },
    )
    const whoami = await load(`http://127.0.0.1:${apiPort}/v1/whoami`, `Bearer ${org.api_key}`)

    const row = (name: string, r: Result) =>
      `${name.padEnd(28)}${String(r.rps).padStart(10)}${r.p50_ms.toFixed(2).padStart(10)}${r.p99_ms.toFixed(2).padStart(10)}${String(r.errors).padStart(8)}`
    console.log(`${'target'.padEnd(28)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'errors'.padStart(8)}`)
    console.log(row('baseline Bun.serve hello', baseline))
    console.log(row('GET /v1/whoami (API key)', whoami))
    const ratio = whoami.rps / baseline.rps
    console.log(`\nratio whoami/baseline: ${ratio.toFixed(3)} (target >= 0.25); whoami p99 ${whoami.p99_ms} ms (target < 10 ms)`)
  } finally {
    await stopAll(children)
  }
}
