/** Helpers shared by the benchmark sections of `make bench`. */
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import type { Sql } from '../../src/db/client'
import { loadConfig } from '../../src/config'
import { createContext, type AppContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { PLUGINS } from '../../src/plugins'

/** A free loopback port (the listener that found it is closed again at once). */
const BENCH_SECRET = 'bench-secret-0123456789abcdef0123456789'

/** A context on the bench's database with the service's plugins, for sections that call services directly. */
export const benchContext = (sql: Sql): AppContext =>
  createContext(loadConfig({ SECRET_KEY: BENCH_SECRET, LOG_LEVEL: 'silent' }), sql, new ServerKeys(BENCH_SECRET), { plugins: PLUGINS })

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = s.port
  s.stop(true)
  return port
}

/** Runs a load process to completion and returns the JSON object on the last line of its stdout. */
export async function runJson<T>(argv: string[]): Promise<T> {
  const proc = Bun.spawn(argv, { stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(proc.stdout).text()
  const code = await proc.exited
  const last = out.trim().split('\n').at(-1)
  if (code !== 0 || !last) throw new Error(`${argv.slice(0, 2).join(' ')} exited with ${code}`)
  return JSON.parse(last) as T
}

/** One wrk run: requests/s, latency percentiles, and the requests that failed or were not 2xx/3xx. */
export interface WrkResult {
  rps: number
  p50_ms: number
  p99_ms: number
  requests: number
  errors: number
  /** with `cpuOf`: that process's CPU (and its children's) per request of the measured run, in ms */
  cpu_ms_per_request?: number
}

/** The wrk figure `1.23ms`, `456.00us` or `1.20s` in ms. */
function wrkMs(value: string): number {
  const [, n, unit] = value.match(/^([\d.]+)(us|ms|s|m)$/) ?? []
  return Number(n) * ({ us: 0.001, ms: 1, s: 1000, m: 60_000 }[unit as 'us'] ?? NaN)
}

/**
 * Drives `url` with wrk (the external load generator: 2 threads, `connections` connections,
 * `seconds` after 1 s of warm-up); `method` and `body` through a Lua script. With `cpuOf` (the
 * serving process's pid), its CPU time over the measured run is read from /proc.
 */
export async function wrk(
  url: string,
  opts: { connections: number; seconds: number; headers?: Record<string, string>; method?: string; body?: string; cpuOf?: number },
): Promise<WrkResult> {
  const script = `${tmpdir()}/agent-mail-wrk-${crypto.randomUUID()}.lua`
  const lines = [`wrk.method = ${JSON.stringify(opts.method ?? 'GET')}`]
  if (opts.body !== undefined) lines.push(`wrk.body = ${JSON.stringify(opts.body)}`)
  for (const [name, value] of Object.entries(opts.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`)
  await Bun.write(script, lines.join('\n'))
  const run = async (seconds: number) => {
    const proc = Bun.spawn(['wrk', '-t2', `-c${opts.connections}`, `-d${seconds}s`, '--latency', '-s', script, url], { stdout: 'pipe', stderr: 'inherit' })
    const out = await new Response(proc.stdout).text()
    if ((await proc.exited) !== 0) throw new Error(`wrk exited with ${proc.exitCode}: ${out}`)
    return out
  }
  try {
    await run(1)
    const cpuBefore = opts.cpuOf === undefined ? null : processTreeCpuMicros(opts.cpuOf)
    const out = await run(opts.seconds)
    const cpuAfter = opts.cpuOf === undefined ? null : processTreeCpuMicros(opts.cpuOf)
    const field = (re: RegExp) => out.match(re)?.[1]
    const requests = Number(field(/(\d+) requests in/))
    const socketErrors = [...(field(/Socket errors: (.*)/) ?? '').matchAll(/\d+/g)].reduce((sum, m) => sum + Number(m[0]), 0)
    return {
      rps: Math.round(Number(field(/Requests\/sec:\s+([\d.]+)/))),
      p50_ms: wrkMs(field(/\s50%\s+(\S+)/) ?? ''),
      p99_ms: wrkMs(field(/\s99%\s+(\S+)/) ?? ''),
      requests,
      errors: Number(field(/Non-2xx or 3xx responses: (\d+)/) ?? 0) + socketErrors,
      ...(cpuBefore !== null && cpuAfter !== null && requests > 0 && { cpu_ms_per_request: (cpuAfter - cpuBefore) / 1000 / requests }),
    }
  } finally {
    await rm(script, { force: true })
  }
}

/** Kills the children a section started and waits for them. */
export async function stopAll(children: Bun.Subprocess[]): Promise<void> {
  for (const child of children) child.kill()
  await Promise.all(children.map(c => c.exited))
}

/**
 * Wall-clock milliseconds since the epoch with sub-millisecond resolution. Every process of a
 * section that compares times across processes (all on this machine) uses this one clock.
 */
export const epochMs = (): number => performance.timeOrigin + performance.now()

/** Waits until `url` answers 2xx (30 s at most: a service starts slowly on a loaded machine). */
export async function waitForHttp(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok) return
    } catch {}
    await Bun.sleep(100)
  }
  throw new Error(`${url} did not come up`)
}

/**
 * Starts the service (src/index.ts) as one of `children`, with `env` over this process's
 * environment (PORT among it), stdout to /dev/null (its JSON log lines are part of the cost, as
 * in production) and stderr inherited, and waits until its API answers /v1/health. With
 * `profile` (the default), the profileArgs() flags apply.
 */
export async function startService(
  children: Bun.Subprocess[],
  env: Record<string, string> & { PORT: string },
  { profile = true } = {},
): Promise<Bun.Subprocess> {
  const service = Bun.spawn([process.execPath, ...(profile ? profileArgs() : []), `${import.meta.dir}/../../src/index.ts`], {
    stdout: 'ignore',
    stderr: 'inherit',
    // one smtp process unless a section asks for more: the layouts measured are the section's
    env: { ...process.env, SMTP_PROCESSES: '1', ...env },
  })
  children.push(service)
  await waitForHttp(`http://127.0.0.1:${env.PORT}/v1/health`)
  return service
}

/**
 * Starts dns-stub.ts as one of `children` on a free loopback port, answering `records` (the
 * MemoryRecords shape; anything else NXDOMAIN), and resolves its port once it listens: the
 * value of the service's DNS_SERVERS is `127.0.0.1:<port>`.
 */
export async function startDnsStub(children: Bun.Subprocess[], records: Record<string, unknown> = {}): Promise<number> {
  const port = await freePort()
  const stub = Bun.spawn([process.execPath, `${import.meta.dir}/dns-stub.ts`, String(port)], {
    stdout: 'pipe',
    stderr: 'inherit',
    env: { ...process.env, BENCH_DNS: JSON.stringify(records) },
  })
  children.push(stub)
  let said = ''
  for await (const chunk of stub.stdout.pipeThrough(new TextDecoderStream())) if ((said += chunk).includes('ready')) return port
  throw new Error(`the DNS stub exited before it listened: ${said}`)
}

/** Waits until an SMTP server on the loopback port sends its 220 greeting (30 s at most: a loaded machine starts it slowly). */
export async function waitForSmtpGreeting(port: number): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const greeted = await new Promise<boolean>(resolve => {
      Bun.connect({
        hostname: '127.0.0.1',
        port,
        socket: {
          data(s, data) {
            resolve(new TextDecoder().decode(data).startsWith('220'))
            s.end()
          },
          close: () => resolve(false),
          error: () => resolve(false),
          connectError: () => resolve(false),
        },
      }).catch(() => resolve(false))
    })
    if (greeted) return
    await Bun.sleep(100)
  }
  throw new Error(`SMTP on port ${port} did not come up`)
}

let clockTicks: number | undefined
function ticksPerSecond(): number {
  try {
    clockTicks ??= Number(Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim()) || 100
  } catch {
    clockTicks = 100
  }
  return clockTicks
}

/** User + system CPU time of a process (all its threads), or of one of its threads, in microseconds, from /proc (Linux); null elsewhere. */
export function processCpuMicros(pid: number, thread?: number): number | null {
  try {
    const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / ticksPerSecond()
  } catch {
    return null
  }
}

/** The CPU time of `pid` and of its child processes, in microseconds (Linux); null when unknown. */
export function processTreeCpuMicros(pid: number): number | null {
  const own = processCpuMicros(pid)
  if (own === null) return null
  let children: number[] = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {}
  return children.reduce((sum, child) => sum + (processTreeCpuMicros(child) ?? 0), own)
}

/** The p-th percentile (0-100) of ascending `sorted`, rounded to 0.01; 0 for no values. */
export function percentile(sorted: number[], p: number): number {
  const v = sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
  return Math.round(v * 100) / 100
}

/** What closedLoop measured. */
export interface LoopResult {
  /** attempts started, warm-up included */
  sends: number
  /** attempts that succeeded, warm-up included */
  ok: number
  /** ascending, in ms, of the attempts started after the warm-up */
  latencies: number[]
  /** the measured window on the loop's clock: [end of warm-up, end] */
  warmupEnd: number
  end: number
}

/** What a load generator prints of its loop: counts, the measured window, p50/p99 and its own CPU per send. */
export function loopSummary(r: LoopResult, extra: Record<string, unknown> = {}) {
  const cpu = process.cpuUsage()
  return {
    sends: r.sends,
    ok: r.ok,
    errors: r.sends - r.ok,
    ...extra,
    window: [r.warmupEnd, r.end],
    measured: r.latencies.length,
    p50_ms: percentile(r.latencies, 50),
    p99_ms: percentile(r.latencies, 99),
    cpu_us_per_send: Math.round((cpu.user + cpu.system) / Math.max(1, r.sends)),
  }
}

/**
 * The loop of a closed-loop load generator: `connections` clients each run `attempt(n)` (n counts
 * the attempts of all clients from 0), one after another, for 1 s of warm-up plus `durationMs`
 * on `clock` (performance.now() unless given), and at most `maxSends` attempts in all.
 * `attempt` resolves to whether it succeeded and does not throw. The latency of an attempt
 * started after the warm-up is kept if it succeeded, or always with `measureFailures`.
 */
export async function closedLoop(
  options: { connections: number; durationMs: number; maxSends?: number; clock?: () => number; measureFailures?: boolean },
  attempt: (n: number) => Promise<boolean>,
): Promise<LoopResult> {
  const { connections, durationMs, maxSends = Infinity, clock = () => performance.now(), measureFailures = false } = options
  const latencies: number[] = []
  let sends = 0
  let ok = 0
  const warmupEnd = clock() + 1000
  const end = warmupEnd + durationMs
  const client = async () => {
    while (clock() < end && sends < maxSends) {
      const n = sends++
      const started = clock()
      const succeeded = await attempt(n)
      if (succeeded) ok++
      if (started >= warmupEnd && (succeeded || measureFailures)) latencies.push(clock() - started)
    }
  }
  await Promise.all(Array.from({ length: connections }, client))
  latencies.sort((a, b) => a - b)
  return { sends, ok, latencies, warmupEnd, end }
}

/**
 * Bun flags for the service process of a section: with BENCH_PROFILE_DIR set, a CPU profile
 * (Chrome format and a markdown summary) is written there when the service exits.
 */
export function profileArgs(): string[] {
  const out = process.env.BENCH_PROFILE_DIR
  return out ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${out}`] : []
}

/**
 * CPU time (microseconds, from /proc) of the PostgreSQL backends serving the database `sql`
 * is connected to, other than the caller's own connection: the database's share of a run,
 * apart from whatever else the server is doing. Backends that appear during a run count from 0.
 */
export async function databaseCpu(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
  const out = new Map<number, number>()
  for (const { pid } of rows) {
    const us = processCpuMicros(pid)
    if (us !== null) out.set(pid, us)
  }
  return out
}

/** The CPU time the backends used between two `databaseCpu` readings; null without /proc. */
export function databaseCpuSpent(before: Map<number, number>, after: Map<number, number>): number | null {
  if (after.size === 0) return null
  let spent = 0
  for (const [pid, us] of after) spent += us - (before.get(pid) ?? 0)
  return spent
}

/**
 * Refreshes the planner's statistics, as autovacuum does in a running service after every
 * 10% of growth. postgres.js prepares its statements, and PostgreSQL keeps a generic plan for
 * each after five executions: planned while a scratch database's tables hold a few rows, it
 * scans whole tables (a delivery's email by seq scan, say) for the rest of a run that grows
 * them by thousands of rows within seconds, long before autovacuum's first pass. ANALYZE
 * invalidates those plans. Sections call it after their warm-up and before each measured run,
 * so what they measure is the service on tables of a known size with current statistics.
 */
export async function refreshStatistics(sql: Sql): Promise<void> {
  await sql`analyze`
}
