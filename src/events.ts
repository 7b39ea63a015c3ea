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
/**
 * `pg_notify(CHANGES_CHANNEL, ...)` goes with the statement that records changes (changes/record.ts):
 * a `mailSignal` payload, the organization id and the addresses the changes are about.
 */
export const CHANGES_CHANNEL = 'changes'
/** `pg_notify(ORGS_CHANNEL, org_id)` goes with a change of an organization's plan, entitlements or limits (account/org-queries.ts). */
export const ORGS_CHANNEL = 'orgs'

type Channel = typeof EMAILS_CHANNEL | typeof CHANGES_CHANNEL

/** NOTIFY payloads must stay under 8000 bytes; past this, a signal names the organization only. */
export const MAX_SIGNAL_BYTES = 7000

/**
 * The payload of a new-mail signal: the organization id, then the lowercase addresses the mail
 * is of (inbound: its envelope recipients; outbound: its sender), separated by spaces.
 */
export function mailSignal(orgId: string, addresses: Iterable<string>): string {
  const payload = [orgId, ...new Set([...addresses].map(a => a.toLowerCase()))].join(' ')
  return payload.length > MAX_SIGNAL_BYTES || /[^\x21-\x7e ]/.test(payload) ? orgId : payload
}

/**
 * One wait's registration, kept from its first read to its answer: a signal for it sets a flag
 * and settles `next()`, so a long-poll that reads again after a wake needs no new registration,
 * timer or abort signal, and a parked one costs its place in a set.
 */
export class Waiter {
  private woken = false
  private settle: (() => void) | undefined
  /** set by `end()`: the wait is over (its time is up, or its client went away) */
  ended = false

  constructor(private readonly leave: (waiter: Waiter) => void) {}

  wake() {
    this.woken = true
    this.settle?.()
    this.settle = undefined
  }

  end() {
    this.ended = true
    this.wake()
  }

  /** Whether a signal came since the last call; clears it. */
  take(): boolean {
    const woken = this.woken
    this.woken = false
    return woken
  }

  /** Resolves at the next signal or `end()`, at once if one came since the last `take()`. */
  next(): Promise<void> {
    return this.woken ? Promise.resolve() : new Promise(resolve => (this.settle = resolve))
  }

  /** Unregisters it: no signal reaches it any more. */
  close() {
    this.leave(this)
  }
}

/** The waiters of one organization on one channel: unfiltered, and by the address they wait for. */
interface OrgWaiters {
  any: Set<Waiter>
  byAddress: Map<string, Set<Waiter>>
}

/** Wakes an organization's waiters for mail of `addresses`: the unfiltered ones, and those of the addresses (all of them when none are named). */
function wakeIn(org: OrgWaiters, addresses: string[]) {
  for (const waiter of org.any) waiter.wake()
  if (addresses.length === 0) for (const set of org.byAddress.values()) for (const waiter of set) waiter.wake()
  else for (const address of addresses) for (const waiter of org.byAddress.get(address) ?? []) waiter.wake()
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

  /** Registers a wait for changes of `orgId` (about `address`, when given) until its `close()`: an event stream's. */
  subscribeChanges(orgId: string, address?: string): Waiter {
    return this.subscribe(`${CHANGES_CHANNEL}:${orgId}`, address?.toLowerCase())
  }

  /** Registers a long-poll over mail for `orgId` (of `address`, when given) until its `close()`. */
  subscribeMail(orgId: string, address?: string): Waiter {
    return this.subscribe(`${EMAILS_CHANNEL}:${orgId}`, address?.toLowerCase())
  }

  private subscribe(name: string, address?: string): Waiter {
    let org = this.waiters.get(name)
    if (!org) this.waiters.set(name, (org = { any: new Set(), byAddress: new Map() }))
    let set = address === undefined ? org.any : org.byAddress.get(address)
    if (!set) org.byAddress.set(address!, (set = new Set()))
    const registered = set
    const waiter = new Waiter(w => {
      registered.delete(w)
      if (address !== undefined && !registered.size && org.byAddress.get(address) === registered) org.byAddress.delete(address)
      if (!org.any.size && !org.byAddress.size && this.waiters.get(name) === org) this.waiters.delete(name)
    })
    registered.add(waiter)
    return waiter
  }

  private wait(name: string, ms: number, signal?: AbortSignal, address?: string): Promise<boolean> {
    if (signal?.aborted || this.ending) return Promise.resolve(false)
    const waiter = this.subscribe(name, address)
    return new Promise(resolve => {
      const timer = setTimeout(() => waiter.end(), ms)
      const abort = () => waiter.end()
      signal?.addEventListener('abort', abort)
      void waiter.next().then(() => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', abort)
        waiter.close()
        resolve(!waiter.ended)
      })
    })
  }

  /** New mail for `orgId`, of `addresses` (after the commit that stored it; NOTIFY already carries it when listening). */
  emit(orgId: string, addresses: Iterable<string> = []) {
    if (!this.listening) this.signal(EMAILS_CHANNEL, mailSignal(orgId, addresses))
  }

  /** New changes for `orgId`, about `addresses` (none named: any), after the commit that wrote them. */
  emitChange(orgId: string, addresses: Iterable<string> = []) {
    if (!this.listening) this.signal(CHANGES_CHANNEL, mailSignal(orgId, addresses))
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
 * A long-poll over mail: `read` until it finds something or `ms` pass. It is registered before
 * its first read, so mail stored between a read and the wait still wakes it; a wake whose read
 * finds nothing (mail that another filter of the list excludes) waits on for the rest of the time.
 * One registration, one timer and one abort listener serve the whole poll, however many wakes.
 */
export async function pollMail<R>(
  events: MailEvents,
  wait: { orgId: string; address?: string; ms: number; signal: AbortSignal },
  read: () => Promise<R>,
  found: (result: R) => boolean,
): Promise<R> {
  if (wait.ms <= 0 || wait.signal.aborted) return read()
  const waiter = events.subscribeMail(wait.orgId, wait.address)
  const end = () => waiter.end()
  const timer = setTimeout(end, wait.ms)
  wait.signal.addEventListener('abort', end)
  try {
    for (;;) {
      // a signal that came before this read began is for mail the read sees
      waiter.take()
      const result = await read()
      // a stopping process answers with what it has (endWaits woke this wait for one more read)
      if (found(result) || waiter.ended || events.ending) return result
      await waiter.next()
      if (waiter.ended) return result
    }
  } finally {
    clearTimeout(timer)
    wait.signal.removeEventListener('abort', end)
    waiter.close()
  }
}
