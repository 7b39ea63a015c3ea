/**
 * "Something new for organization X" signals for long-polls: new mail (`GET /v1/emails?wait=`)
 * and new changes (`GET /v1/changes?wait=`) travel the same path. A writer sends NOTIFY inside
 * its transaction and emits in-process after its commit. A process that LISTENs (a real
 * PostgreSQL: the api role) takes every signal from NOTIFY alone, its own writes' included, so
 * each commit wakes its waiters once; without LISTEN (PGlite, tests) the in-process emit does.
 *
 * A new-mail signal names the addresses the mail is of (`mailSignal`): a waiter filtered to an
 * address (an inbox, a connection key, `address=`) wakes only for mail of that address, or for
 * a signal too long to name them all.
 */
import type { Sql } from './db/client'
import { log } from './log'
import { perProcess } from './context'
import { listenForever } from './db/listener'

/** `pg_notify(EMAILS_CHANNEL, mailSignal(...))` goes with the statement that stores a message (an inbound batch: `countStored`). */
export const EMAILS_CHANNEL = 'emails'
/** `pg_notify(CHANGES_CHANNEL, org_id)` goes with the statement that records changes (changes/record.ts). */
export const CHANGES_CHANNEL = 'changes'
/** `pg_notify(ORGS_CHANNEL, org_id)` goes with a change of an organization's plan, entitlements or limits (account/orgs.ts). */
export const ORGS_CHANNEL = 'orgs'

type Channel = typeof EMAILS_CHANNEL | typeof CHANGES_CHANNEL

/** NOTIFY payloads must stay under 8000 bytes; past this, a signal names the organization only. */
const MAX_SIGNAL_BYTES = 7000

/**
 * The payload of a new-mail signal: the organization id, then the lowercase addresses the mail
 * is of (inbound: its envelope recipients; outbound: its sender), separated by spaces.
 */
export function mailSignal(orgId: string, addresses: Iterable<string>): string {
  const payload = [orgId, ...new Set([...addresses].map(a => a.toLowerCase()))].join(' ')
  return payload.length > MAX_SIGNAL_BYTES || /[^\x21-\x7e ]/.test(payload) ? orgId : payload
}

type Wake = () => void

/** The waiters of one organization on one channel: unfiltered, and by the address they wait for. */
interface OrgWaiters {
  any: Set<Wake>
  byAddress: Map<string, Set<Wake>>
}

/** Wakes an organization's waiters for mail of `addresses`: the unfiltered ones, and those of the addresses (all of them when none are named). */
function wakeIn(org: OrgWaiters, addresses: string[]) {
  const woken = [...org.any]
  if (addresses.length === 0) for (const set of org.byAddress.values()) woken.push(...set)
  else for (const address of addresses) woken.push(...(org.byAddress.get(address) ?? []))
  for (const wake of woken) wake()
}

export class MailEvents {
  private readonly waiters = new Map<string, OrgWaiters>()
  private unlisten: (() => Promise<void>)[] = []
  private readonly orgListeners = new Set<(orgId: string) => void>()
  /** true once the process is stopping: long-polls answer at once with what they have */
  ending = false
  /** true once this process relays NOTIFY (not on the embedded database): every commit's signal then reaches it */
  listening = false

  /** Resolves true when mail for `orgId` (of `address`, when given) arrives within `ms`, false on timeout or abort. */
  waitForMail(orgId: string, ms: number, signal?: AbortSignal, address?: string): Promise<boolean> {
    return this.wait(`${EMAILS_CHANNEL}:${orgId}`, ms, signal, address?.toLowerCase())
  }

  /** Resolves true when a change of `orgId` commits within `ms`, false on timeout or abort. */
  waitForChange(orgId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.wait(`${CHANGES_CHANNEL}:${orgId}`, ms, signal)
  }

  /** How many long-polls wait in this process (for the benchmark's memory per waiter). */
  get waiting(): number {
    let n = 0
    for (const org of this.waiters.values()) {
      n += org.any.size
      for (const set of org.byAddress.values()) n += set.size
    }
    return n
  }

  private wait(name: string, ms: number, signal?: AbortSignal, address?: string): Promise<boolean> {
    if (signal?.aborted || this.ending) return Promise.resolve(false)
    return new Promise(resolve => {
      let org = this.waiters.get(name)
      if (!org) this.waiters.set(name, (org = { any: new Set(), byAddress: new Map() }))
      let set = address === undefined ? org.any : org.byAddress.get(address)
      if (!set) org.byAddress.set(address!, (set = new Set()))
      const done = (value: boolean) => {
        clearTimeout(timer)
        set.delete(wake)
        if (address !== undefined && !set.size) org.byAddress.delete(address)
        if (!org.any.size && !org.byAddress.size && this.waiters.get(name) === org) this.waiters.delete(name)
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

  /** New mail for `orgId`, of `addresses` (after the commit that stored it; NOTIFY already carries it when listening). */
  emit(orgId: string, addresses: Iterable<string> = []) {
    if (!this.listening) this.signal(EMAILS_CHANNEL, mailSignal(orgId, addresses))
  }

  /** New changes for `orgId` (after the commit that wrote them). */
  emitChange(orgId: string) {
    if (!this.listening) this.signal(CHANGES_CHANNEL, orgId)
  }

  /** Wakes the waiters a payload (`mailSignal`, or an organization id alone) is for. */
  private signal(channel: Channel, payload: string) {
    const [orgId, ...addresses] = payload.split(' ')
    const org = this.waiters.get(`${channel}:${orgId}`)
    if (org) wakeIn(org, addresses)
  }

  /**
   * Relays NOTIFY, this process's own included, on a connection of its own (not on PGlite). When
   * that connection comes back after a loss, every waiter is woken to read again: signals sent
   * while it was gone are lost.
   */
  async listen(sql: Sql) {
    const listener = await listenForever(
      sql,
      [EMAILS_CHANNEL, CHANGES_CHANNEL, ORGS_CHANNEL],
      (channel, payload) => (channel === ORGS_CHANNEL ? this.orgChanged(payload) : this.signal(channel as Channel, payload)),
      () => this.wakeAll(),
    )
    this.unlisten.push(() => listener.close())
    this.listening = true
    log.debug('listening for new mail and change notifications')
  }

  /**
   * Calls `listener` with the id of an organization whose plan, entitlements or limits changed in
   * any process, once this process listens (the api role on a real PostgreSQL): caches of what an
   * organization may do forget it at once instead of at the end of their time to live.
   */
  onOrgChanged(listener: (orgId: string) => void) {
    this.orgListeners.add(listener)
  }

  private orgChanged(orgId: string) {
    for (const listener of this.orgListeners) listener(orgId)
  }

  /**
   * Ends every wait, now and from now on: each long-poll is woken, reads once more (a new wait
   * returns at once) and answers with what it finds, so that a stopping process answers them
   * instead of cutting them off.
   */
  endWaits() {
    this.ending = true
    this.wakeAll()
  }

  /** Wakes every waiter, of every organization and channel. */
  private wakeAll() {
    for (const org of [...this.waiters.values()]) wakeIn(org, [])
  }

  async close() {
    this.listening = false
    await Promise.all(this.unlisten.splice(0).map(u => u()))
  }
}

/** This process's new-mail signals (the api role listens for NOTIFY into them). */
export const mailEvents = perProcess(() => new MailEvents())

/**
 * A long-poll over mail: `read` until it finds something or `ms` pass. It subscribes before each
 * read, so mail stored between a read and the wait still wakes it; a wake whose read finds
 * nothing (mail that another filter of the list excludes) waits out the rest of the time.
 */
export async function pollMail<R>(
  events: MailEvents,
  wait: { orgId: string; address?: string; ms: number; signal: AbortSignal },
  read: () => Promise<R>,
  found: (result: R) => boolean,
): Promise<R> {
  const deadline = Date.now() + wait.ms
  for (;;) {
    const stop = new AbortController()
    const remaining = deadline - Date.now()
    const woken = remaining > 0 ? events.waitForMail(wait.orgId, remaining, AbortSignal.any([stop.signal, wait.signal]), wait.address) : null
    try {
      const result = await read()
      if (found(result) || !woken || !(await woken)) return result
    } finally {
      stop.abort()
    }
  }
}
