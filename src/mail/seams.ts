/**
 * The seams of the mail pipeline: what a feature may add to storing a message and to receiving
 * one. The pipeline names no feature; src/plugins.ts lists what plugs in (contact counters, a
 * published agent's last activity, webhook deliveries, email-native x402 steps).
 */
import type postgres from 'postgres'
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import type { ChangeInput } from '../changes/record'
import type { ParsedMail } from './inbound/parse'
import type { StoredEmail } from './store'

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
 * A common table expression (`name as (update ...)`) joined to the one statement that stores a
 * message: it moves in the store's transaction and costs no extra round trip.
 */
export type StoreExtension = (tx: Tx, m: MessageActivity) => postgres.Fragment

/**
 * Acts on the received copies of one stored batch: made once per batch (so the copies can share
 * what they read), then called for each copy in the batch's transaction, after its store. What
 * it writes commits with the mail or not at all; the changes it returns go to the changes feed
 * with the mail's own.
 */
export type ReceivedMailConsumer = (ctx: AppContext) => (tx: Tx, email: StoredEmail, mail: ParsedMail) => Promise<ChangeInput[] | void>
