/** The job queue on the real database: claiming, retries, dead letters, leases, hand-backs and cleanup. */
import { describe, expect, test } from 'bun:test'
import { randomUUIDv7 } from 'bun'
import { backoffSeconds, claim, claimById, deleteJobs, enqueue, enqueueEachWith, fail, heartbeat, JOBS_CHANNEL, releaseClaimed } from '../../src/jobs/queue'
import { cleanup } from '../../src/maintenance/cleanup.job'
import { startWorker } from '../../src/jobs/worker'
import type { JobKind } from '../../src/jobs/kind'
import { testApp, testSql } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { until } from '../helpers/until'

const kind = () => `test.${randomUUIDv7()}`

async function jobRow(id: string) {
  const sql = await testSql()
  const [row] = await sql<{ status: string; attempts: number; locked_by: string | null; last_error: string | null; run_at: Date }[]>`
    select status, attempts, locked_by, last_error, run_at from jobs where id = ${id}`
  return row
}

/** Listens on the jobs channel; `heard` resolves at the first NOTIFY for kind `k`. */
async function notified(k: string): Promise<{ heard: Promise<void> }> {
  // The embedded fallback serves one connection, so nothing can LISTEN on it (workers poll there).
  if ((await testDatabase()).kind !== 'postgres') return { heard: Promise.resolve() }
  const sql = await testSql()
  let hear!: () => void
  const heard = new Promise<void>(resolve => (hear = resolve))
  const listener = await sql.listen(JOBS_CHANNEL, kind => kind === k && hear())
  return { heard: heard.finally(() => listener.unlisten()) }
}

describe('the queue', () => {
  test('a job exists only if its transaction commits', async () => {
    const sql = await testSql()
    const k = kind()
    await sql
      .begin(async tx => {
        await enqueue(tx, k, {})
        throw new Error('rolled back')
      })
      .catch(() => {})
    expect(await claim(sql, 'w', [k], 10)).toEqual([])
  })

  test('two workers claiming at once never get the same job', async () => {
    const sql = await testSql()
    const k = kind()
    await sql.begin(async tx => {
      for (let i = 0; i < 20; i++) await enqueue(tx, k, { i })
    })
    const [a, b] = await Promise.all([claim(sql, 'a', [k], 15), claim(sql, 'b', [k], 15)])
    const ids = [...a!, ...b!].map(j => j.id)
    expect(ids.length).toBe(20)
    expect(new Set(ids).size).toBe(20)
  })

  test('enqueueEachWith: one statement runs the write and inserts a job per entry, claimed ones with their attempt counted; only unclaimed ones wake workers', async () => {
    const sql = await testSql()
    const k = kind()
    const marker = `marker-${randomUUIDv7()}`
    const { heard } = await notified(k)
    const ids = await sql.begin(tx =>
      enqueueEachWith(tx, tx`insert into rate_limit_windows (bucket, window_start, used) values (${marker}, 0, 1)`, k, [
        { payload: { n: 1 }, claimedBy: 'inline_test', runAt: new Date(Date.now() + 60_000), maxAttempts: 5 },
        { payload: { n: 2 } },
      ]),
    )
    await heard
    const rows = await sql<{ id: string; payload: { n: number }; locked_by: string | null; attempts: number; max_attempts: number; locked: boolean }[]>`
      select id, payload, locked_by, attempts, max_attempts, locked_at is not null as locked from jobs where kind = ${k}`
    const byId = new Map(rows.map(r => [r.id, r]))
    expect(ids.map(id => byId.get(id))).toEqual([
      { id: ids[0]!, payload: { n: 1 }, locked_by: 'inline_test', attempts: 1, max_attempts: 5, locked: true },
      { id: ids[1]!, payload: { n: 2 }, locked_by: null, attempts: 0, max_attempts: 10, locked: false },
    ])
    expect((await sql`select 1 from rate_limit_windows where bucket = ${marker}`).length).toBe(1)
    expect((await claim(sql, 'w', [k], 10)).map(j => j.id)).toEqual([ids[1]!])
  })

  test('a dedupe key keeps one pending job', async () => {
    const sql = await testSql()
    const k = kind()
    const first = await sql.begin(tx => enqueue(tx, k, {}, { dedupeKey: k }))
    const second = await sql.begin(tx => enqueue(tx, k, {}, { dedupeKey: k }))
    expect(first).toBeString()
    expect(second).toBeNull()
  })

  test('a failed attempt is rescheduled with back-off; the last one is dead and kept', async () => {
    const sql = await testSql()
    const k = kind()
    const id = (await sql.begin(tx => enqueue(tx, k, {}, { maxAttempts: 2 })))!
    let [job] = await claim(sql, 'w', [k], 1)
    expect(await fail(sql, job!, 'boom')).toBe(false)
    const retried = await jobRow(id)
    expect(retried).toMatchObject({ status: 'pending', attempts: 1, locked_by: null, last_error: 'boom' })
    expect(retried!.run_at.getTime()).toBeGreaterThan(Date.now())
    ;[job] = await claim(sql, 'w', [k], 1, new Date(Date.now() + 3600_000))
    expect(await fail(sql, job!, 'boom again')).toBe(true)
    expect(await jobRow(id)).toMatchObject({ status: 'dead', attempts: 2, last_error: 'boom again' })
    expect(await claim(sql, 'w', [k], 1, new Date(Date.now() + 86400_000))).toEqual([])
  })

  test('back-off grows exponentially, with jitter, capped at an hour', () => {
    expect(backoffSeconds(1)).toBeWithin(1, 4)
    expect(backoffSeconds(5)).toBeWithin(24, 41)
    expect(backoffSeconds(30)).toBeLessThanOrEqual(4500)
  })

  test('a job due later, or inserted claimed, wakes no worker: notifications are for jobs due now', async () => {
    if ((await testDatabase()).kind !== 'postgres') return
    const sql = await testSql()
    const [later, claimed, now] = [kind(), kind(), kind()]
    const heard: string[] = []
    let hearNow!: () => void
    const nowHeard = new Promise<void>(resolve => (hearNow = resolve))
    const listener = await sql.listen(JOBS_CHANNEL, k => {
      heard.push(k)
      if (k === now) hearNow()
    })
    try {
      await sql.begin(async tx => {
        await enqueue(tx, later, {}, { runAt: new Date(Date.now() + 60_000) })
        await enqueueEachWith(tx, tx`select 1`, claimed, [
          { payload: {}, claimedBy: 'inline_test' },
          { payload: {}, runAt: new Date(Date.now() + 60_000) },
        ])
      })
      // committed after the others: notifications arrive in commit order, so once this one is heard the others would have been
      await sql.begin(tx => enqueue(tx, now, {}))
      await nowHeard
      expect(heard.filter(k => k === later || k === claimed)).toEqual([])
    } finally {
      await listener.unlisten()
    }
  })

  test('jobs a stopping worker holds are handed back at once without counting the attempt, and listening workers are woken', async () => {
    const sql = await testSql()
    const k = kind()
    const id = (await sql.begin(tx => enqueue(tx, k, {})))!
    const leaving = `leaving_${randomUUIDv7()}`
    expect((await claim(sql, leaving, [k], 1)).map(j => j.id)).toEqual([id])
    const woken = await notified(k)
    expect(await releaseClaimed(sql, leaving)).toBe(1)
    await woken.heard
    expect(await releaseClaimed(sql, leaving)).toBe(0)
    expect(await jobRow(id)).toMatchObject({ attempts: 0, locked_by: null })
    const job = await claimById(sql, 'w', id)
    expect(job).toMatchObject({ id, attempts: 1, locked_by: 'w' })
    expect(await claimById(sql, 'other', id)).toBeNull()
    await deleteJobs(sql, [job!.id])
    expect(await jobRow(id)).toBeUndefined()
  })

  /** A job of a fresh kind claimed by a fresh holder whose lease was last renewed `secondsAgo`. */
  async function leased(secondsAgo: number, opts: { maxAttempts?: number } = {}) {
    const sql = await testSql()
    const k = kind()
    const id = (await sql.begin(tx => enqueue(tx, k, {}, opts)))!
    const holder = `holder_${randomUUIDv7()}`
    const [job] = await claim(sql, holder, [k], 1)
    await sql`update jobs set locked_at = now() - make_interval(secs => ${secondsAgo}) where id = ${id}`
    return { k, id, holder, job: job! }
  }

  test('a heartbeat renews every lease of its holder in one statement, and frees only leases that ran out', async () => {
    const sql = await testSql()
    const mine = await leased(50)
    const second = (await sql.begin(tx => enqueue(tx, mine.k, {})))!
    await claim(sql, mine.holder, [mine.k], 1)
    const live = await leased(10)
    // renewed: both of mine, however old; the other holder's 10-second-old lease is not expired at 30
    expect(await heartbeat(sql, mine.holder, 30)).toMatchObject({ renewed: 2 })
    for (const id of [mine.id, second]) expect((await jobRow(id))!.locked_by).toBe(mine.holder)
    const [fresh] = await sql<{ age: number }[]>`select extract(epoch from now() - locked_at)::float8 as age from jobs where id = ${mine.id}`
    expect(fresh!.age).toBeLessThan(5)
    expect((await jobRow(live.id))!.locked_by).toBe(live.holder)
  })

  test('a lease that ran out is freed by any heartbeat: the job runs again with its attempt counted and its payload unchanged', async () => {
    const sql = await testSql()
    const dead = await leased(120)
    const woken = await notified(dead.k)
    const beat = await heartbeat(sql, `live_${randomUUIDv7()}`, 60)
    expect(beat.freed).toBeGreaterThanOrEqual(1)
    await woken.heard
    expect(await jobRow(dead.id)).toMatchObject({ status: 'pending', attempts: 1, locked_by: null })
    const [again] = await claim(sql, 'next', [dead.k], 10)
    expect(again).toMatchObject({ id: dead.id, attempts: 2 })
    // the dead holder's late failure is not recorded over the new attempt
    await fail(sql, dead.job, 'late')
    expect(await jobRow(dead.id)).toMatchObject({ locked_by: 'next', attempts: 2, last_error: expect.stringContaining('stopped renewing its lease') })
    await deleteJobs(sql, [again!.id])
  })

  test('a job whose last attempt was lost with its worker gets one more, to record its outcome; lost again, it is dead', async () => {
    const sql = await testSql()
    const lost = await leased(120, { maxAttempts: 1 })
    const live = `live_${randomUUIDv7()}`
    await heartbeat(sql, live, 60)
    expect(await jobRow(lost.id)).toMatchObject({
      status: 'pending',
      attempts: 1,
      locked_by: null,
      last_error: expect.stringContaining('stopped renewing its lease'),
    })
    const [final] = await claim(sql, `crashes_too_${randomUUIDv7()}`, [lost.k], 1)
    expect(final!.attempts).toBeGreaterThanOrEqual(final!.max_attempts)
    await sql`update jobs set locked_at = now() - interval '2 minutes' where id = ${lost.id}`
    await heartbeat(sql, live, 60)
    expect(await jobRow(lost.id)).toMatchObject({ status: 'dead', attempts: 2, locked_by: null })
  })

  test('a worker runs its kinds, retries a throwing handler, and stops cleanly', async () => {
    const { ctx } = await testApp()
    const k = kind()
    const seen: number[] = []
    const worker = await startWorker(ctx, {
      pollMs: 20,
      kinds: [
        {
          kind: k,
          retryDelaySeconds: () => 0,
          async handle(_c, p: { n: number }, job) {
            seen.push(p.n)
            if (job.attempts < 2) throw new Error('first attempt fails')
          },
        },
      ],
    })
    await ctx.sql.begin(tx => enqueue(tx, k, { n: 7 }))
    worker.wake()
    for (let i = 0; i < 100 && seen.length < 2; i++) await Bun.sleep(20)
    await worker.drain()
    await worker.stop(1000)
    expect(seen).toEqual([7, 7])
  })

  test('a worker renews the lease of a job that runs longer than the lease, so no other worker runs it meanwhile', async () => {
    const { ctx } = await testApp()
    const k = kind()
    let runs = 0
    const handle = async (_c: unknown, _p: unknown, job: { id: string }) => {
      runs++
      // outlive the lease twice over, measured on the database's clock
      while ((await ctx.sql`select 1 from jobs where id = ${job.id} and created_at > now() - interval '4 seconds'`).length > 0) await Bun.sleep(100)
    }
    const a = await startWorker(ctx, { pollMs: 50, leaseSeconds: 2, kinds: [{ kind: k, handle }] })
    const id = (await ctx.sql.begin(tx => enqueue(tx, k, {})))!
    a.wake()
    while (runs === 0) await Bun.sleep(20)
    const b = await startWorker(ctx, { pollMs: 50, leaseSeconds: 2, kinds: [{ kind: k, handle }] })
    await a.drain()
    await Promise.all([a.stop(1000), b.stop(1000)])
    expect(runs).toBe(1)
    expect(await jobRow(id)).toBeUndefined()
  }, 15_000)

  test('a worker frees the job of a holder whose lease ran out and runs it again', async () => {
    const { ctx } = await testApp()
    const k = kind()
    const seen: number[] = []
    const id = (await ctx.sql.begin(tx => enqueue(tx, k, {})))!
    await claim(ctx.sql, `crashed_${randomUUIDv7()}`, [k], 1)
    await ctx.sql`update jobs set locked_at = now() - interval '1 minute' where id = ${id}`
    const worker = await startWorker(ctx, { pollMs: 50, leaseSeconds: 1, kinds: [{ kind: k, handle: async (_c, _p, job) => void seen.push(job.attempts) }] })
    while (seen.length === 0) await Bun.sleep(20)
    await worker.drain()
    await worker.stop(1000)
    expect(seen).toEqual([2])
    expect(await jobRow(id)).toBeUndefined()
  }, 10_000)

  /**
   * Enqueues jobs `{ n }` of a fresh kind handled by `handleMany` (retries at once), runs a worker of
   * their own until `done` (at most 2 s), drains and stops it; returns how many of the jobs are left.
   */
  async function runMany(ns: number[], handleMany: NonNullable<JobKind<{ n: number }>['handleMany']>, done: () => boolean): Promise<number> {
    const { ctx } = await testApp()
    const k = kind()
    const worker = await startWorker(ctx, { pollMs: 20, kinds: [{ kind: k, retryDelaySeconds: () => 0, handle: async () => {}, handleMany }] })
    await ctx.sql.begin(async tx => {
      for (const n of ns) await enqueue(tx, k, { n })
    })
    worker.wake()
    for (let i = 0; i < 100 && !done(); i++) await Bun.sleep(20)
    await worker.drain()
    await worker.stop(1000)
    return (await ctx.sql`select 1 from jobs where kind = ${k}`).length
  }

  test('handleMany starts the jobs claimed together; each one is completed or retried on its own', async () => {
    const batches: number[][] = []
    const left = await runMany(
      [1, 2, 3],
      (_c, jobs) => {
        batches.push(jobs.map(j => j.payload.n))
        return jobs.map(async j => {
          if (j.payload.n === 2 && j.attempts === 1) throw new Error('fails once')
        })
      },
      () => batches.length >= 2,
    )
    expect(batches.map(b => b.sort())).toEqual([[1, 2, 3], [2]])
    expect(left).toBe(0)
  })

  test('a handleMany that throws before returning fails each attempt, and the worker goes on', async () => {
    let calls = 0
    const left = await runMany(
      [1],
      (_c, jobs) => {
        if (++calls === 1) throw new Error('malformed payload')
        return jobs.map(async () => {})
      },
      () => calls >= 2,
    )
    expect(calls).toBe(2)
    expect(left).toBe(0)
  })

  test('a wake-up that arrives while the worker is claiming is not lost', async () => {
    const { ctx } = await testApp()
    const k = kind()
    let ran!: () => void
    const done = new Promise<void>(resolve => (ran = resolve))
    // The clock is read as a claim starts: advancing it there and waking the worker stands for a
    // job committed (and NOTIFY'd) after that claim's snapshot. Only a poll would find it, and
    // the poll is a minute away: the test times out unless that wake-up makes the worker claim again.
    let now = new Date()
    let armed = false
    const worker = await startWorker(ctx, {
      pollMs: 60_000,
      kinds: [{ kind: k, handle: async () => ran() }],
      clock() {
        const claimAt = now
        if (armed) {
          armed = false
          now = new Date(now.getTime() + 3600_000)
          worker.wake()
        }
        return claimAt
      },
    })
    await ctx.sql.begin(tx => enqueue(tx, k, {}, { runAt: new Date(now.getTime() + 60_000) }))
    await worker.drain()
    armed = true
    worker.wake()
    await done
    await worker.stop(1000)
  }, 5000)
})

describe('claiming as slots free', () => {
  test('a slot that frees while jobs wait is filled at once, not when half the slots are free or at the poll', async () => {
    const { ctx } = await testApp()
    const k = kind()
    const started: number[] = []
    const gates = new Map<number, () => void>()
    // the poll is a minute away: only a claim for the freed slot starts the fifth job in time
    const worker = await startWorker(ctx, {
      concurrency: 4,
      pollMs: 60_000,
      kinds: [{ kind: k, handle: (_c, p: { n: number }) => new Promise<void>(resolve => (started.push(p.n), gates.set(p.n, resolve))) }],
    })
    await ctx.sql.begin(async tx => {
      for (let n = 0; n < 6; n++) await enqueue(tx, k, { n })
    })
    worker.wake()
    await until(
      async () => started.length,
      n => n === 4,
    )
    gates.get(started[0]!)!()
    const five = await until(
      async () => started.length,
      n => n === 5,
    )
    expect(five).toBe(5)
    gates.get(started[1]!)!()
    await until(
      async () => started.length,
      n => n === 6,
    )
    for (const open of gates.values()) open()
    await worker.drain()
    await worker.stop(1000)
    expect([...started].sort()).toEqual([0, 1, 2, 3, 4, 5])
  }, 15_000)
})

describe('cleanup', () => {
  test('deletes expired idempotency records and past rate-limit windows', async () => {
    const { ctx } = await testApp()
    const sql = await testSql()
    const scope = `test:${randomUUIDv7()}`
    await sql`insert into idempotency_keys (scope, key, request_hash, response_status, response_sealed, expires_at) values (${scope}, 'old', 'h', 200, '\\x00', now() - interval '1 second')`
    await sql`insert into idempotency_keys (scope, key, request_hash, response_status, response_sealed, expires_at) values (${scope}, 'new', 'h', 200, '\\x00', now() + interval '1 hour')`
    await sql`insert into rate_limit_windows (bucket, window_start, used) values (${scope}, 0, 1)`
    await cleanup(ctx)
    expect((await sql`select key from idempotency_keys where scope = ${scope}`).map(r => r.key)).toEqual(['new'])
    expect((await sql`select 1 from rate_limit_windows where bucket = ${scope}`).length).toBe(0)
  })
})
