/**
 * "Something new for organization X" signals for long-polls: new mail (`GET /v1/emails?wait=`)
 * and new changes (`GET /v1/changes?wait=`) travel the same path. A writer emits in-process
 * after its commit and sends NOTIFY inside its transaction; processes that can LISTEN (a real
 * PostgreSQL) relay those notifications to their own waiters, so a long-poll in one process
 * wakes for a write committed by another.
 */
import type { Sql } from '../db/client'
import { log } from '../log'
import { CHANGES_CHANNEL } from '../changes/record'
import { perProcess } from '../context'

/** `pg_notify(EMAILS_CHANNEL, org_id)` goes with the statement that stores a message (an inbound batch: once per organization, `countStored`). */
export const EMAILS_CHANNEL = 'emails'

type Channel = typeof EMAILS_CHANNEL | typeof CHANGES_CHANNEL

export class MailEvents {
  private readonly waiters = new Map<string, Set<() => void>>()
  private unlisten: (() => Promise<void>)[] = []
  /** true once this process relays NOTIFY (not on the embedded database): every commit's signal then reaches it */
  listening = false

  /** Resolves true when mail for `orgId` arrives within `ms`, false on timeout or abort. */
  waitForMail(orgId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.wait(`${EMAILS_CHANNEL}:${orgId}`, ms, signal)
  }

  /** Resolves true when a change of `orgId` commits within `ms`, false on timeout or abort. */
  waitForChange(orgId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.wait(`${CHANGES_CHANNEL}:${orgId}`, ms, signal)
  }

  private wait(name: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise(resolve => {
      const set = this.waiters.get(name) ?? new Set()
      this.waiters.set(name, set)
      const done = (value: boolean) => {
        clearTimeout(timer)
        set.delete(wake)
        if (!set.size) this.waiters.delete(name)
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

  /** New mail for `orgId` (after the commit that stored it). */
  emit(orgId: string) {
    this.signal(EMAILS_CHANNEL, orgId)
  }

  /** New changes for `orgId` (after the commit that wrote them). */
  emitChange(orgId: string) {
    this.signal(CHANGES_CHANNEL, orgId)
  }

  private signal(channel: Channel, orgId: string) {
    for (const wake of [...(this.waiters.get(`${channel}:${orgId}`) ?? [])]) wake()
  }

  /** Relays NOTIFY from other processes; needs a connection of its own (not on PGlite). */
  async listen(sql: Sql) {
    for (const channel of [EMAILS_CHANNEL, CHANGES_CHANNEL] as const) {
      const sub = await sql.listen(channel, orgId => this.signal(channel, orgId))
      this.unlisten.push(() => sub.unlisten())
    }
    this.listening = true
    log.debug('listening for new mail and change notifications')
  }

  async close() {
    this.listening = false
    await Promise.all(this.unlisten.splice(0).map(u => u()))
  }
}

/** This process's new-mail signals (the api role listens for other processes' NOTIFY into them). */
export const mailEvents = perProcess(() => new MailEvents())
