/**
 * Fixed-window rate limits shared by every process through PostgreSQL (`rate_limit_take`).
 * To keep the database off the hot path, a process leases a few requests at a time from the
 * shared counter and spends them locally. The shared count never exceeds the limit; a lease a
 * process has not spent yet can make another process refuse slightly early, never late.
 *
 * A lease is `maxLease` requests (RATE_LIMIT_LEASE), at most 1/50 of the limit. A bucket that
 * spends its lease within FAST_LEASE_MS asks for twice as many next time (within
 * STEADY_LEASE_MS, as many again), up to 50 leases' worth and still at most 1/50 of the limit:
 * an organization with a raised limit serving thousands of requests a second makes a few round
 * trips a second, not one per 20 requests, and its requests do not all wait on a refill each
 * time the rate dips.
 *
 * The bound, with any number of processes: in each window of the database's clock, the requests
 * allowed are at most the limit. A lease is counted in the window the database granted it in, so
 * its tokens must not be spent after that window ends: a process dates its lease's end from the
 * moment it asked (the database answered later, so the window ends no sooner than that), never
 * from the answer's arrival, which a busy event loop may read long after the window ended. Only
 * while the database cannot be reached does the limiter allow everything (fail open).
 */
import { LRUCache } from 'lru-cache'
import type { Sql } from '../db/client'
import { log } from '../log'
import { errors, type ApiError } from '../errors'
import { perProcess } from '../context'
import { takeFromWindow } from './rate-limit-queries'

export const WINDOW_SECONDS = 60
/** a lease spent faster than this is followed by one twice its size */
export const FAST_LEASE_MS = 100
/** a lease spent faster than this (and not faster than FAST_LEASE_MS) by one of the same size */
export const STEADY_LEASE_MS = 1000

interface Lease {
  limit: number
  /** leased from the shared counter and not yet spent */
  tokens: number
  /** the shared counter's value when last read */
  used: number
  /** local clock time the window ends */
  resetAt: number
  /** the shared counter is at its limit until resetAt */
  exhausted: boolean
  /** the size asked for, and when (local clock) */
  asked: number
  leasedAt: number
}

export interface RateDecision {
  allowed: boolean
  limit: number
  /** an estimate; undefined when the limiter could not tell */
  remaining?: number
  resetAt: number
}

export class RateLimiter {
  private readonly leases = new LRUCache<string, Lease>({ max: 50_000 })
  private readonly refills = new Map<string, Promise<Lease | null>>()

  constructor(
    private readonly sql: Sql,
    private readonly maxLease: number,
    /** the width of a window; other than a minute in tests only */
    private readonly windowSeconds = WINDOW_SECONDS,
  ) {}

  /** Spends one request of `bucket`, whose limit is `limit` per window. Fails open if the database is unavailable. */
  async take(bucket: string, limit: number): Promise<RateDecision> {
    for (;;) {
      const now = Date.now()
      const lease = this.leases.get(bucket)
      if (lease && lease.resetAt > now && lease.limit === limit) {
        if (lease.tokens > 0) {
          lease.tokens--
          return { allowed: true, limit, remaining: Math.max(0, limit - lease.used + lease.tokens), resetAt: lease.resetAt }
        }
        if (lease.exhausted) return { allowed: false, limit, remaining: 0, resetAt: lease.resetAt }
      }
      const fresh = await this.refill(bucket, limit, lease?.limit === limit && lease.resetAt > now ? lease : undefined)
      if (!fresh) return { allowed: true, limit, resetAt: now + this.windowSeconds * 1000 }
    }
  }

  /** One database round trip per bucket at a time; concurrent callers share it. */
  private refill(bucket: string, limit: number, spent?: Lease): Promise<Lease | null> {
    let pending = this.refills.get(bucket)
    if (!pending) {
      pending = this.lease(bucket, limit, spent).finally(() => this.refills.delete(bucket))
      this.refills.set(bucket, pending)
    }
    return pending
  }

  /** A lease of `bucket` from the shared counter; `spent`: this window's previous lease, spent. */
  private async lease(bucket: string, limit: number, spent?: Lease): Promise<Lease | null> {
    const share = Math.ceil(limit / 50)
    const base = Math.max(1, Math.min(this.maxLease, share))
    const most = Math.max(base, Math.min(this.maxLease * 50, share))
    const age = spent ? Date.now() - spent.leasedAt : Infinity
    const want = age < FAST_LEASE_MS ? Math.min(most, spent!.asked * 2) : age < STEADY_LEASE_MS ? Math.min(most, spent!.asked) : base
    const askedAt = Date.now()
    try {
      const row = await takeFromWindow(this.sql, bucket, this.windowSeconds, want, limit)
      if (!row) return null
      const lease: Lease = {
        limit,
        tokens: row.granted,
        used: row.used,
        // from when it was asked, not when the answer was read: the window ends no sooner than that
        resetAt: askedAt + row.reset_ms,
        exhausted: row.granted === 0,
        asked: want,
        leasedAt: Date.now(),
      }
      this.leases.set(bucket, lease)
      return lease
    } catch (error) {
      log.warn('rate limiter unavailable; allowing request', { bucket, error })
      return null
    }
  }
}

/** The `ratelimit-*` headers describing a decision (omitting `remaining` when unknown). */
export function rateLimitHeaders(d: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'ratelimit-limit': String(d.limit),
    'ratelimit-policy': `${d.limit};w=${WINDOW_SECONDS}`,
    // resetAt is the window end dated from before a database round trip, a few ms early: round, not floor
    'ratelimit-reset': String(Math.round(d.resetAt / 1000)),
  }
  if (d.remaining !== undefined) headers['ratelimit-remaining'] = String(d.remaining)
  return headers
}

/** A 429 for a refused decision; `code` is rate_limited for org/IP limits, rate_limit_exceeded per resource. */
export function rateLimitError(d: RateDecision, code: 'rate_limited' | 'rate_limit_exceeded', what: string): ApiError {
  const retryAfter = Math.max(1, Math.ceil((d.resetAt - Date.now()) / 1000))
  return errors.retryLater(code, `${what}: rate limit of ${d.limit} per ${WINDOW_SECONDS} seconds exceeded`, retryAfter, { headers: rateLimitHeaders(d) })
}

/** This process's leases of the shared rate-limit counters. */
export const rateLimiter = perProcess(ctx => new RateLimiter(ctx.sql, ctx.config.RATE_LIMIT_LEASE))
