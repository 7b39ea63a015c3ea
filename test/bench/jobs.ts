/**
 * The job queue under sustained churn (issue 19, "Also"): a producer enqueues BENCH_JOBS_RATE
 * jobs per second (default 500, in transactions of 50) and a worker (32 slots) runs them (a
 * handler that returns at once) for BENCH_JOBS_SECONDS (default 180). Every job is an insert,
 * a claim (update) and a delete, so the table's dead rows grow with the work unless something
 * vacuums it. Twice, on the same table: first with no maintenance (what a server without
 * autovacuum did before), then with the worker's statistics job (src/maintenance/planner.job.ts,
 * every 15 seconds), which vacuums the queue past 1,000 dead rows where autovacuum is off.
 * Printed every fifth of the run: dead rows, live rows and the table's size with its indexes.
 * (Where autovacuum is on, sql/0027's per-table settings make it do the same.)
 */
import type { Sql } from '../../src/db/client'
import { enqueue } from '../../src/jobs/queue'
import { startWorker } from '../../src/jobs/worker'
import type { JobKind } from '../../src/jobs/kind'
import { plannerJob } from '../../src/maintenance/planner.job'
import { benchContext } from './common'

const RATE = Number(process.env.BENCH_JOBS_RATE ?? 500)
const SECONDS = Number(process.env.BENCH_JOBS_SECONDS ?? 180)
const SAMPLES = 5

interface Sample {
  at_s: number
  dead: number
  live: number
  bytes: number
}

async function sample(sql: Sql, started: number): Promise<Sample> {
  const [row] = await sql<{ dead: number; live: number; bytes: number }[]>`
    select n_dead_tup::int as dead, n_live_tup::int as live, pg_total_relation_size(relid)::float8 as bytes
      from pg_stat_user_tables where relname = 'jobs'`
  return { at_s: Math.round((performance.now() - started) / 1000), ...row! }
}

async function churn(sql: Sql, kinds: JobKind[]): Promise<{ samples: Sample[]; ran: number }> {
  const ctx = benchContext(sql)
  let ran = 0
  const noop: JobKind = { kind: 'bench.noop', handle: async () => void ran++ }
  const worker = await startWorker(ctx, { kinds: [noop, ...kinds], pollMs: 100 })
  const started = performance.now()
  const samples = [await sample(sql, started)]
  const end = started + SECONDS * 1000
  const producer = (async () => {
    for (let tick = 0; performance.now() < end; tick++) {
      const due = started + (tick * 50 * 1000) / RATE
      if (due > performance.now()) await Bun.sleep(due - performance.now())
      await sql.begin(async tx => {
        for (let i = 0; i < 50; i++) await enqueue(tx, noop.kind, { i })
      })
      worker.wake()
    }
  })()
  for (let i = 1; i <= SAMPLES; i++) {
    await Bun.sleep(Math.max(0, started + (i * SECONDS * 1000) / SAMPLES - performance.now()))
    samples.push(await sample(sql, started))
  }
  await producer
  await worker.drain()
  await worker.stop(1000)
  return { samples, ran }
}

export async function jobsBench(sql: Sql): Promise<void> {
  const runs: [string, Awaited<ReturnType<typeof churn>>][] = []
  await sql`vacuum full jobs`
  runs.push(['no maintenance', await churn(sql, [])])
  await sql`vacuum full jobs`
  runs.push(['statistics job (vacuums the queue)', await churn(sql, [plannerJob])])
  const [setting] = await sql<{ autovacuum: string }[]>`select current_setting('autovacuum') as autovacuum`
  console.log(
    `\njobs: ${RATE} jobs/s enqueued (transactions of 50) and run by one worker (32 slots), ${SECONDS} s per run; autovacuum ${setting!.autovacuum} on this server\n`,
  )
  const mb = (b: number) => (b / 1024 / 1024).toFixed(2)
  for (const [name, r] of runs) {
    console.log(`${name}: ${r.ran} jobs run`)
    console.log(`${'s'.padStart(6)}${'dead rows'.padStart(12)}${'live rows'.padStart(12)}${'table MB'.padStart(12)}`)
    for (const s of r.samples)
      console.log(`${String(s.at_s).padStart(6)}${String(s.dead).padStart(12)}${String(s.live).padStart(12)}${mb(s.bytes).padStart(12)}`)
  }
}
