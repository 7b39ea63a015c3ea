/**
 * A streaming replica for reads (DATABASE_REPLICA_URL), and how far it has caught up.
 *
 * Every POLL_MS the primary is asked for its WAL position (`pg_current_wal_lsn`, a sample that
 * covers every commit made before it was asked) and the replica for what it has replayed
 * (`pg_last_wal_replay_lsn`). The replica has caught up to a moment when it replayed the sample
 * taken at that moment: it then holds every commit made before it. So a read that must see what
 * a caller wrote up to time t may go to the replica once `caughtUpTo >= t`, and no read goes
 * there while the replica is down, unreachable or further behind than REPLICA_MAX_LAG_MS.
 */
import { log } from '../log'
import type postgres from 'postgres'
import { isDatabaseUnavailable } from './errors'

const POLL_MS = 100
/** samples older than the lag allowed cannot make the replica usable: they are dropped */
const SAMPLES_KEPT = 256

interface Sample {
  at: number
  lsn: bigint
}

/** `16/B374D848` as a number, to compare WAL positions. */
const lsnValue = (lsn: string) => {
  const [high, low] = lsn.split('/')
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
}

export class Replica {
  /** the moment (ms since the epoch) up to which the replica holds every commit of the primary; 0: unknown or down */
  private caughtUpTo = 0
  private samples: Sample[] = []
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private reachable = true

  constructor(
    private readonly primary: postgres.Sql,
    /** the replica's pool: few connections, and a short connect timeout, so that a replica that does not answer holds no read up */
    readonly sql: postgres.Sql,
    private readonly maxLagMs: number,
  ) {}

  start(): this {
    void this.poll()
    return this
  }

  /** Whether a read that must see every commit made before `since` (ms since the epoch; 0: none in particular) may go to the replica. */
  covers(since: number): boolean {
    return this.caughtUpTo >= since && Date.now() - this.caughtUpTo <= this.maxLagMs
  }

  /** A read on the replica failed for want of it: reads go to the primary until a check finds it again. */
  markDown(): void {
    this.caughtUpTo = 0
  }

  private async poll(): Promise<void> {
    if (this.stopped) return
    try {
      await this.check()
    } catch (error) {
      this.markDown()
      if (this.reachable) log.warn('read replica unavailable: reads go to the primary', { error: (error as Error).message })
      this.reachable = false
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.poll(), POLL_MS)
  }

  /** One sample of the primary, then what the replica replayed. */
  async check(): Promise<void> {
    const at = Date.now()
    const [primary] = await this.primary<{ lsn: string }[]>`select pg_current_wal_lsn()::text as lsn`
    this.samples.push({ at, lsn: lsnValue(primary!.lsn) })
    if (this.samples.length > SAMPLES_KEPT) this.samples.shift()
    const [replica] = await this.sql<{ lsn: string | null }[]>`select pg_last_wal_replay_lsn()::text as lsn`
    if (!replica?.lsn) throw new Error('DATABASE_REPLICA_URL is not a replica in recovery (pg_last_wal_replay_lsn() is null)')
    const replayed = lsnValue(replica.lsn)
    const covered = this.samples.filter(s => s.lsn <= replayed)
    if (covered.length) {
      this.caughtUpTo = Math.max(this.caughtUpTo, covered.at(-1)!.at)
      this.samples = this.samples.filter(s => s.lsn > replayed)
    }
    if (!this.reachable) log.info('read replica available again')
    this.reachable = true
  }

  async close(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.sql.end({ timeout: 5 })
  }
}

/** A read failed because the replica went away, or a recovery conflict cancelled it (SQLSTATE 40001): the primary answers instead. */
export const isReplicaFailure = (error: unknown) => isDatabaseUnavailable(error) || (error as { code?: string } | undefined)?.code === '40001'
