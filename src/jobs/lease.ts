/**
 * Keeping the leases of a holder alive (queue.ts `heartbeat`): one statement every third of the
 * lease, so that one late or failed renewal does not lose them. A renewal still running when the
 * next is due is not doubled: under a slow database the statements would pile up.
 */
import type { Sql } from '../db/client'
import { log } from '../log'
import { heartbeat } from './queue'

export const renewEveryMs = (leaseSeconds: number) => Math.round((leaseSeconds * 1000) / 3)

export interface LeaseKeeper {
  stop(): void
}

/** Renews `holder`'s leases until stopped; `onFreed` hears how many jobs of dead holders a renewal freed. */
export function keepLeases(sql: Sql, holder: string, leaseSeconds: number, onFreed?: (freed: number) => void): LeaseKeeper {
  let renewing = false
  const timer = setInterval(async () => {
    if (renewing) return
    renewing = true
    try {
      const { freed } = await heartbeat(sql, holder, leaseSeconds)
      if (freed > 0) onFreed?.(freed)
    } catch (error) {
      log.error('lease renewal failed', { holder, error })
    } finally {
      renewing = false
    }
  }, renewEveryMs(leaseSeconds))
  // the holder's own work keeps the process alive, not its heartbeat
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
