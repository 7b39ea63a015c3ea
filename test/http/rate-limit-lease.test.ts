/**
 * The rate limiter's leases of the shared counter: RATE_LIMIT_LEASE at a time, doubling while a
 * bucket spends them fast, never past 1/50 of the limit, and never past the limit in total.
 */
import { describe, expect, test } from 'bun:test'
import type { Sql } from '../../src/db/client'
import { RateLimiter } from '../../src/http/rate-limit'
import { testSql } from '../helpers/app'
import { unique } from '../helpers/identity'
import { roomInWindow } from '../helpers/rate-window'

/** `sql` counting the statements sent through it (the limiter's only use is a tagged template). */
function counting(sql: Sql): { sql: Sql; count: () => number } {
  let n = 0
  const wrapped = ((...args: Parameters<Sql>) => {
    n++
    return (sql as unknown as (...a: unknown[]) => unknown)(...args)
  }) as unknown as Sql
  return { sql: wrapped, count: () => n }
}

async function used(sql: Sql, bucket: string): Promise<number> {
  const [row] = await sql<{ used: number }[]>`select used from rate_limit_windows where bucket = ${bucket} order by window_start desc limit 1`
  return row?.used ?? 0
}

describe('rate-limit leases', () => {
  test('a bucket spending its leases fast leases more at a time, up to 50 leases and 1/50 of the limit', async () => {
    await roomInWindow()
    const sql = await testSql()
    const db = counting(sql)
    const limiter = new RateLimiter(db.sql, 20)
    const bucket = `test:${unique()}`
    for (let i = 0; i < 20_000; i++) expect((await limiter.take(bucket, 100_000_000)).allowed).toBe(true)
    // 20, 40, 80, ..., 640, then 1000 (50 leases of 20) at a time: 24 round trips, not 1,000
    // (a stall past FAST_LEASE_MS on a loaded machine starts the doubling over: some slack)
    expect(db.count()).toBeLessThanOrEqual(100)
    expect(await used(sql, bucket)).toBeLessThan(20_000 + 1000)
  })

  test('the lease never passes 1/50 of the limit, and the limit is kept', async () => {
    await roomInWindow()
    const sql = await testSql()
    const limiter = new RateLimiter(sql, 20)
    const bucket = `test:${unique()}`
    let allowed = 0
    for (let i = 0; i < 3100; i++) if ((await limiter.take(bucket, 3000)).allowed) allowed++
    expect(allowed).toBe(3000)
    expect(await used(sql, bucket)).toBe(3000)
    // a second process's first lease after that gets nothing
    expect((await new RateLimiter(sql, 20).take(bucket, 3000)).allowed).toBe(false)
  })

  test('a bucket spending its lease within a second keeps its size; slower, it falls back to RATE_LIMIT_LEASE', async () => {
    await roomInWindow()
    const sql = await testSql()
    const limiter = new RateLimiter(sql, 20)
    const bucket = `test:${unique()}`
    // 20, then 40 (the first spent at once), then 40 again (the second spent after 150 ms)
    for (let j = 0; j < 21; j++) await limiter.take(bucket, 100_000_000)
    const doubled = await used(sql, bucket)
    for (let j = 0; j < 39; j++) await limiter.take(bucket, 100_000_000)
    await Bun.sleep(150)
    await limiter.take(bucket, 100_000_000)
    expect((await used(sql, bucket)) - doubled).toBe(40)
    // spent after more than a second: back to 20
    for (let j = 0; j < 39; j++) await limiter.take(bucket, 100_000_000)
    const before = await used(sql, bucket)
    await Bun.sleep(1100)
    await limiter.take(bucket, 100_000_000)
    expect((await used(sql, bucket)) - before).toBe(20)
  })

  test('a bucket spending slowly leases RATE_LIMIT_LEASE at a time', async () => {
    await roomInWindow()
    const sql = await testSql()
    const limiter = new RateLimiter(sql, 20)
    const bucket = `test:${unique()}`
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 20; j++) await limiter.take(bucket, 100_000_000)
      await Bun.sleep(1100)
    }
    await limiter.take(bucket, 100_000_000)
    // four leases of 20 (the first three spent, the fourth begun), none doubled
    expect(await used(sql, bucket)).toBe(80)
  })
})
