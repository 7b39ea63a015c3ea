/**
 * Functions section of `make bench`.
 *
 * 1. Invocation latency and throughput of two functions (a trivial one, and one that parses the
 *    delivery payload and answers with JSON), through the sandbox pool as deliveries use it: a
 *    sandbox thread. "cold": a QuickJS instance of its own with its own 128 MiB-capped memory
 *    and the guest runtime, the module loaded for the invocation; each thread keeps one such
 *    instance prepared ahead (the spare), so a cold start that finds it ready only loads the
 *    module: "cold, spare ready" runs invocations 20 ms apart, "cold, back to back" gives the
 *    thread no time to prepare the next spare; "warm": an idle sandbox of the same deployment
 *    reused; "engine": warm on this thread, without the hop to a sandbox thread.
 *    Beside them, in the same process and run: the same code as a bare `new Function` in Bun,
 *    compiled per call ("compiled per call") and called again ("warm").
 * 2. SMTP 250 to function completed at 100 msg/s: the fan-out section with a routed function
 *    that forwards each event to the loopback receiver (fanout.ts, target function), after the
 *    same at the same rate with an HTTP endpoint on that receiver, as the baseline.
 *
 * Targets (printed, not asserted): cold p50 < 10 ms with the hard memory cap, warm p50 < 0.5 ms,
 * 250-to-completed p50 < 50 ms and p99 < 250 ms.
 */
import { loadavg } from 'node:os'
import type { Sql } from '../../src/db/client'
import { runLimits } from '../../src/functions/limits'
import { runInSandbox, WarmSandboxes } from '../../src/functions/sandbox/engine'
import { SandboxPool } from '../../src/functions/sandbox/pool'
import type { GuestRequest, RunRequest } from '../../src/functions/sandbox/protocol'
import { loadConfig } from '../../src/config'
import { fanoutBench } from './fanout'
import { percentile } from './common'

const ITERATIONS = Number(process.env.BENCH_FUNCTION_ITERATIONS ?? 300)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
/** The pause before each "spare ready" cold start: time for the thread to prepare its spare. */
const SPARE_GAP_MS = 20

const TRIVIAL = `export default { async fetch(request, env) { return new Response('ok') } }`
const PARSING = `export default {
  async fetch(request, env) {
    const event = await request.json()
    const words = (event.email.parsed.body_text || '').split(/\\s+/).length
    return Response.json({ id: event.id, from: event.email.headers.from, subject: event.email.headers.subject, words })
  },
}`

const payload = JSON.stringify({
  event: 'email.received',
  id: 'evt_bench',
  email: {
    id: crypto.randomUUID(),
    headers: { from: 'Bench <bench@sender.example>', subject: 'Status update' },
    parsed: { body_text: 'Status update from the build agent: all checks passed, the report is attached below. '.repeat(20) },
  },
})
const request: GuestRequest = {
  method: 'POST',
  url: 'https://functions.internal/bench',
  headers: [['content-type', 'application/json']],
  body: Buffer.from(payload).toString('base64'),
}
const limits = runLimits(loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'x'.repeat(32) }))
const noFetch = async () => ({ error: 'no fetch in the benchmark' })

interface Figures {
  p50: number
  p99: number
  /** CPU time of the whole process (every thread) per invocation, in ms: what the work costs, however loaded the machine */
  cpu: number
  perSecond: number
}

/** `n` invocations one after the other (after a pause of `gapMs` each): latencies and CPU per invocation. */
async function sequential(run: () => Promise<unknown>, n = ITERATIONS, gapMs = 0): Promise<Omit<Figures, 'perSecond'>> {
  const times: number[] = []
  const cpuBefore = process.cpuUsage()
  for (let i = 0; i < n; i++) {
    if (gapMs) await Bun.sleep(gapMs)
    const t = performance.now()
    await run()
    times.push(performance.now() - t)
  }
  const cpu = process.cpuUsage(cpuBefore)
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99), cpu: (cpu.user + cpu.system) / 1000 / n }
}

/** Invocations completed per second with `parallel` in flight, for SECONDS. */
async function throughput(run: () => Promise<unknown>, parallel: number): Promise<number> {
  const end = performance.now() + SECONDS * 1000
  let done = 0
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (performance.now() < end) {
        await run()
        done++
      }
    }),
  )
  return Math.round(done / SECONDS)
}

/** The module as a bare function: `export default` becomes a return value. */
function bare(code: string) {
  return new Function(code.replace('export default', 'return'))() as { fetch(r: Request, env: object): Promise<Response> }
}

async function bareCall(handler: { fetch(r: Request, env: object): Promise<Response> }) {
  const res = await handler.fetch(new Request(request.url, { method: 'POST', body: payload, headers: { 'content-type': 'application/json' } }), {})
  await res.text()
}

export async function functionsBench(sql: Sql, dbUrl: string): Promise<void> {
  const pool = new SandboxPool(2)
  const rows: [string, Figures][] = []
  const n = (v: number | string) => String(v).padStart(10)
  console.log(
    `\nfunctions: ${ITERATIONS} sequential invocations per row (150, each after a ${SPARE_GAP_MS} ms pause, for "spare ready"), then ${SECONDS} s with 8 in flight; load average ${loadavg()[0]!.toFixed(2)}\n`,
  )
  for (const [name, code] of [
    ['trivial', TRIVIAL],
    ['parse payload, answer JSON', PARSING],
  ] as const) {
    const invoke: RunRequest = { kind: 'invoke', code, request, env: {}, limits }
    const warmInvoke: RunRequest = { ...invoke, warmKey: `bench-${name}` }
    const check = await pool.run(invoke, noFetch)
    if (check.outcome !== 'ok') throw new Error(`bench function ${name}: ${check.outcome} ${check.error?.message}`)
    const cold = () => pool.run(invoke, noFetch)
    const warm = () => pool.run(warmInvoke, noFetch)
    const local = new WarmSandboxes()
    const engineWarm = () => runInSandbox(warmInvoke, { request: noFetch }, local)
    rows.push([`${name}: cold, spare ready (thread)`, { ...(await sequential(cold, Math.min(ITERATIONS, 150), SPARE_GAP_MS)), perSecond: 0 }])
    rows.push([`${name}: cold, back to back (thread)`, { ...(await sequential(cold)), perSecond: await throughput(cold, 8) }])
    rows.push([`${name}: warm (same deployment, thread)`, { ...(await sequential(warm)), perSecond: await throughput(warm, 8) }])
    rows.push([`${name}: warm, engine on this thread`, { ...(await sequential(engineWarm)), perSecond: await throughput(engineWarm, 1) }])
    rows.push([
      `${name}: new Function, compiled per call`,
      { ...(await sequential(() => bareCall(bare(code)))), perSecond: await throughput(() => bareCall(bare(code)), 1) },
    ])
    const handler = bare(code)
    rows.push([`${name}: new Function, warm`, { ...(await sequential(() => bareCall(handler))), perSecond: await throughput(() => bareCall(handler), 1) }])
  }
  pool.stop()
  console.log(`${'invocation'.padEnd(56)}${n('p50 ms')}${n('p99 ms')}${n('cpu ms')}${n('inv/s')}`)
  for (const [name, f] of rows) console.log(`${name.padEnd(56)}${n(f.p50.toFixed(3))}${n(f.p99.toFixed(3))}${n(f.cpu.toFixed(3))}${n(f.perSecond || '-')}`)
  console.log(
    '(cpu ms: CPU time of the whole process, every thread, per invocation in the sequential run, the spare preparations included; inv/s: with 8 in flight, 1 for the rows on this thread)',
  )
  const [spare, cold, warm] = [rows[0]![1], rows[1]![1], rows[2]![1]]
  console.log(
    `\ntrivial function, through a sandbox thread, each instance with the hard memory cap: cold start p50 ${spare.p50.toFixed(2)} ms with the spare ready, ${cold.p50.toFixed(2)} ms back to back (target < 10); ` +
      `warm p50 ${warm.p50.toFixed(3)} ms (target < 0.5; the engine alone is the fourth row)`,
  )
  // the same path to an HTTP endpoint first, in the same run: what the function adds is the difference
  await fanoutBench(sql, dbUrl, { target: 'http', rates: [100] })
  await fanoutBench(sql, dbUrl, { target: 'function', rates: [100] })
}
