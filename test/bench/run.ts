/**
 * `make bench`: authenticated GET /v1/whoami on the real PostgreSQL against a bare Bun.serve
 * "hello" measured in the same run, each driven by a separate load process. Prints both
 * results and the ratio. Target on a 2-core machine: whoami at least 1/4 of the baseline's
 * throughput, p99 under 10 ms at 50 connections.
 */
import postgres from 'postgres'
import { connectUrl } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { createOrgCommand, setApiLimitCommand } from '../../src/admin/commands'

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const serverUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const dir = import.meta.dir

interface Result { requests: number; errors: number; rps: number; p50_ms: number; p99_ms: number }

async function load(url: string, authorization?: string): Promise<Result> {
  const proc = Bun.spawn(['bun', `${dir}/load.ts`, url, String(CONNECTIONS), String(SECONDS), ...(authorization ? [authorization] : [])], { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(proc.stdout).text()
  await proc.exited
  return JSON.parse(out.trim().split('\n').at(-1)!)
}

async function freePort() {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}

async function waitFor(url: string) {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(url)).ok) return
    } catch {}
    await Bun.sleep(100)
  }
  throw new Error(`${url} did not come up`)
}

const dbName = `agent_mail_bench_${Date.now().toString(36)}`
const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
await admin.unsafe(`create database ${dbName}`)
const dbUrl = Object.assign(new URL(serverUrl), { pathname: `/${dbName}` }).toString()
const sql = connectUrl(dbUrl, 2)
const children: Bun.Subprocess[] = []
try {
  await migrate(sql)
  const org = await createOrgCommand(sql, { plan: 'developer', name: 'bench' })
  // The plan's 3000/min would turn the run into a 429 benchmark; the limiter still runs.
  await setApiLimitCommand(sql, org.org_id, '100000000')

  console.log(`bench: ${CONNECTIONS} connections, ${SECONDS} s per target after 1 s of warm-up, ${navigator.hardwareConcurrency} cores\n`)

  const helloPort = await freePort()
  children.push(Bun.spawn(['bun', `${dir}/hello.ts`, String(helloPort)], { stdout: 'ignore' }))
  await waitFor(`http://127.0.0.1:${helloPort}/`)
  const baseline = await load(`http://127.0.0.1:${helloPort}/`)

  const apiPort = await freePort()
  children.push(
    Bun.spawn(['bun', `${dir}/../../src/index.ts`], {
      // the request log is part of the cost measured: one JSON line per request, to /dev/null
      stdout: 'ignore',
      stderr: 'inherit',
      env: { ...process.env, DATABASE_URL: dbUrl, PORT: String(apiPort), HOST: '127.0.0.1', ROLES: 'api', SECRET_KEY: 'bench-secret-0123456789abcdef0123456789', LOG_LEVEL: 'info' },
    }),
  )
  await waitFor(`http://127.0.0.1:${apiPort}/v1/health`)
  const whoami = await load(`http://127.0.0.1:${apiPort}/v1/whoami`, `Bearer ${org.api_key}`)

  const row = (name: string, r: Result) =>
    `${name.padEnd(28)}${String(r.rps).padStart(10)}${r.p50_ms.toFixed(2).padStart(10)}${r.p99_ms.toFixed(2).padStart(10)}${String(r.errors).padStart(8)}`
  console.log(`${'target'.padEnd(28)}${'req/s'.padStart(10)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'errors'.padStart(8)}`)
  console.log(row('baseline Bun.serve hello', baseline))
  console.log(row('GET /v1/whoami (API key)', whoami))
  const ratio = whoami.rps / baseline.rps
  console.log(`\nratio whoami/baseline: ${ratio.toFixed(3)} (target >= 0.25); whoami p99 ${whoami.p99_ms} ms (target < 10 ms)`)
} finally {
  for (const child of children) child.kill()
  await Promise.all(children.map(c => c.exited))
  await sql.end({ timeout: 5 })
  await admin.unsafe(`drop database if exists ${dbName} with (force)`)
  await admin.end({ timeout: 5 })
}
