/**
 * Storing a message, inbound or outbound: its thread, the parsed fields, the exact bytes, the
 * organization's storage accounting and the new-mail notification, in the caller's transaction.
 * An inbound batch does the accounting and the notification itself, once per organization
 * (`batched`, reserveStorage, countStored).
 */
import { randomUUIDv7 } from 'bun'
import type { Tx } from '../db/client'
import type { AppContext } from '../context'
import { mailSignal } from '../events'
import type postgres from 'postgres'
import type { AuthVerdicts } from './inbound/authenticate'
import { type Extracted, NOT_EXTRACTED } from './inbound/threads'
import { countStorageAndNotify, insertEmail } from './store-queries'
import type { StoreInput, StoredEventType } from './store-types'

/** A message being stored, as the statements joined to its store see it. */
export interface MessageActivity {
  orgId: string
  direction: 'inbound' | 'outbound'
  /** the From address */
  from: string | null
  rcptTo: string[]
  at: Date
}

/**
 * The seam of the store: a common table expression (`name as (update ...)`) a feature joins to
 * the one statement that stores any message, inbound or sent, so that it moves in the store's
 * transaction at no extra round trip (contacts' counters, a published agent's last activity).
 */
export type StoreExtension = (tx: Tx, m: MessageActivity) => postgres.Fragment

declare module '../context' {
  interface Plugins {
    /** joined to the statement that stores any message (mail/store.ts) */
    readonly storeExtensions: readonly StoreExtension[]
  }
}

export interface StoredEmail {
  id: string
  orgId: string
  threadId: string
  eventType: StoredEventType
  /** the envelope recipients of this organization's copy */
  rcptTo: string[]
  mailFrom: string
  sizeBytes: number
  receivedAt: Date
  auth: AuthVerdicts
  /** the new content stored with it (all null for sent mail) */
  extracted: Extracted
}

/** Bytes and emails to add to each organization's storage counters, by organization id. */
export type StorageCounts = Map<string, { bytes: number; emails: number }>

/**
 * The storage counters and new-mail notifications of `batched` stores, one update per
 * organization instead of one per message: `counts` for the organizations not counted by
 * reserveStorage, `notified` the new-mail signal of each organization that got mail (`mailSignal`). The rows come in the order of
 * their ids, which the plan for a few rows follows, so concurrent batches rarely lock them in
 * opposite orders; when they do, PostgreSQL fails one of them, and its messages are written
 * again one by one (GroupCommit).
 */
export async function countStored(tx: Tx, counts: StorageCounts, notified: Iterable<string>): Promise<void> {
  const orgs = [...counts.keys()].sort()
  await countStorageAndNotify(
    tx,
    orgs,
    orgs.map(o => counts.get(o)!.bytes),
    orgs.map(o => counts.get(o)!.emails),
    [...notified],
  )
}

/** The addresses a stored message is of, as the address filter of a list reads them (`ofAddress`). */
export function signalAddresses(s: Pick<StoreInput, 'direction' | 'rcptTo' | 'mail'>): string[] {
  return s.direction === 'inbound' ? s.rcptTo : s.mail.from?.address ? [s.mail.from.address] : []
}

/**
 * Stores a message in one statement, with the statements the features join to it
 * (`ctx.plugins.storeExtensions`).
 */
export async function storeEmail(ctx: AppContext, tx: Tx, s: StoreInput): Promise<StoredEmail> {
  const id = s.id ?? randomUUIDv7()
  const at = new Date()
  const { mail } = s
  const batched = s.batched ?? false
  const extracted = s.extracted ?? NOT_EXTRACTED
  const participants = [mail.from?.address, ...mail.to.map(a => a.address), ...mail.cc.map(a => a.address)].filter((a): a is string => Boolean(a))
  const activity: MessageActivity = { orgId: s.orgId, direction: s.direction, from: mail.from?.address ?? null, rcptTo: s.rcptTo, at }
  const extensions = ctx.plugins.storeExtensions.map(extend => extend(tx, activity))
  const threadId = await insertEmail(tx, { ...s, id, at, batched, extracted, participants, signal: mailSignal(s.orgId, signalAddresses(s)) }, extensions)
  return {
    id,
    orgId: s.orgId,
    threadId,
    eventType: s.eventType,
    rcptTo: s.rcptTo,
    mailFrom: s.mailFrom,
    sizeBytes: s.raw.byteLength,
    receivedAt: at,
    auth: s.auth,
    extracted,
  }
}
