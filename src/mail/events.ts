/**
 * "New mail for organization X" signals for long-polls. A store emits in-process after its
 * commit and sends NOTIFY inside its transaction; processes that can LISTEN (a real
 * PostgreSQL) relay those notifications to their own waiters, so a long-poll in one process
 * wakes for mail stored by another.
 */
import type { Sql } from '../db/client'
import { log } from '../log'
import { perProcess } from '../context'

/** `pg_notify(EMAILS_CHANNEL, org_id)` goes with the statement that stores a message (an inbound batch: once per organization, `countStored`). */
export const EMAILS_CHANNEL = 'emails'

export class MailEvents {
  private readonly waiters = new Map<string, Set<() => void>>()
  private unlisten?: () => Promise<void>

  /** Resolves true when mail for `orgId` arrives within `ms`, false on timeout or abort. */
  waitForMail(orgId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise(resolve => {
      const set = this.waiters.get(orgId) ?? new Set()
      this.waiters.set(orgId, set)
      const done = (value: boolean) => {
        clearTimeout(timer)
        set.delete(wake)
        if (!set.size) this.waiters.delete(orgId)
        signal?.removeEventListener('abort', abort)
        resolve(value)
      }
      const wake = () => done(true)
      const abort = () => done(false)
      const timer = setTimeout(() => done(false), ms)
      set.add(wake)
      signal?.addEventListener('abort', abort)
    })
  }

  emit(orgId: string) {
    for (const wake of [...(this.waiters.get(orgId) ?? [])]) wake()
  }

  /** Relays NOTIFY from other processes; needs a connection of its own (not on PGlite). */
  async listen(sql: Sql) {
    const sub = await sql.listen(EMAILS_CHANNEL, orgId => this.emit(orgId))
    this.unlisten = () => sub.unlisten()
    log.debug('listening for new mail notifications')
  }

  async close() {
    await this.unlisten?.()
  }
}

/** This process's new-mail signals (the api role listens for other processes' NOTIFY into them). */
export const mailEvents = perProcess(() => new MailEvents())
