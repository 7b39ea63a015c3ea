/**
 * An accepted SMTP transaction becomes stored mail: parsed and authenticated once, then one
 * copy per recipient organization, each with its thread, storage accounting and webhook
 * deliveries (with their jobs), all committed before `ingest` returns, so the caller's `250`
 * always follows the commit.
 *
 * The work splits in two. `prepare` is the per-message CPU and DNS work: postal-mime,
 * SPF/DKIM/DMARC/ARC with mailauth and the reply without its quotes (extract.ts), all three on
 * the pool of inbound threads (threads.ts), whose DNS lookups come back to the resolver here;
 * and the recipients' organizations. It runs in the SMTP session that received the message,
 * concurrently with the others. The writes go through the
 * process's group commit: the messages of concurrent sessions are stored in one transaction,
 * their statements pipelined, so the database sees one commit per batch instead of one per
 * message.
 */
import { perProcess, type AppContext } from '../../context'
import type { Tx } from '../../db/client'
import { GroupCommit } from '../../db/group-commit'
import type { Resolver } from '../../dns/resolver'
import { log } from '../../log'
import { reserveStorage } from '../../account/org-queries'
import { countStored, storeEmail, type StorageCounts, type StoredEmail } from '../store'
import type { AuthVerdicts } from './authenticate'
import { classify, type EmailEventType } from './classify'
import { type Extracted, inboundThreads } from './threads'
import type { ParsedMail } from './parse'
import { claimReceipts, resendDigest } from './receipts'
import { releaseReceipt } from './receipt-queries'
import { setLockTimeout } from './ingest-queries'
import { isReport, parseReport, type MailReport } from './report'
import { resolveRecipients, type ResolvedRecipient } from './recipients'
import { mailEvents, mailSignal } from '../../events'
import { eventId, recordChanges, type ChangeInput } from '../../changes/record'

export interface InboundMessage {
  raw: Uint8Array
  mailFrom: string
  rcptTo: string[]
  remoteIp: string
  helo?: string
  tls: boolean
  /** `rcptTo` as resolved at RCPT, where known (the SMTP listener), to save looking them up again */
  recipients?: (ResolvedRecipient | undefined)[]
}

/** What the store did with each organization's copy. */
export interface IngestResult {
  stored: StoredEmail[]
  /** organizations whose copy was refused because their storage is full */
  refused: string[]
  /** the message was stored already (receipts.ts): sent again by a client that missed its 250; nothing was stored now */
  resent?: true
}

/** A message parsed, authenticated and assigned to organizations: everything but the writes. */
interface PreparedMessage {
  msg: InboundMessage
  mail: ParsedMail
  /** its new content, without the quoted earlier messages (extract.ts): once per message, whatever its copies */
  extracted: Extracted
  /** the search vector's words of the message (search-text.ts), cut on its thread; undefined where the extraction was abandoned */
  searchLexemes: string | undefined
  auth: AuthVerdicts
  eventType: EmailEventType
  /** what recognizes the message when it is sent again (receipts.ts); null without a Message-ID */
  digest: Buffer | null
  /** the report part of a bounce or an abuse report, else null */
  report: MailReport | null
  /** each accepting organization with its envelope recipients and its storage limit (bytes; null = none) */
  copies: { orgId: string; rcptTo: string[]; storageLimit: number | null }[]
}

export type InboundCommits = GroupCommit<PreparedMessage, IngestResult>

/**
 * The seam of received mail: a feature acting on the copies of one stored batch (webhook
 * deliveries, email-native x402 steps). Made once per batch (so the copies can share what they
 * read), then called for each copy in the batch's transaction, after its store: what it writes
 * commits with the mail or not at all, and the changes it returns go to the feed with the mail's.
 */
export type ReceivedMailConsumer = (ctx: AppContext) => (tx: Tx, email: StoredEmail, mail: ParsedMail, copy: ReceivedCopy) => Promise<ChangeInput[] | void>

/** What the consumers of one copy know and tell each other beyond the stored message. */
export interface ReceivedCopy {
  /** the report part of a bounce or an abuse report (report.ts), else null */
  readonly report: MailReport | null
  /**
   * Fields a consumer adds to the copy's webhook event (the send a bounce is about): consumers
   * run in the order of `receivedMail`, so those listed before the webhooks' add them.
   */
  readonly eventFields: Record<string, unknown>
}

declare module '../../context' {
  interface Plugins {
    /** acts on each received copy in the transaction that stores it (mail/inbound/ingest.ts) */
    readonly receivedMail: readonly ReceivedMailConsumer[]
  }
}

/**
 * The longest a batch waits for a row lock (an organization's counters, a thread) before it
 * fails: one batch is written at a time, so a batch that waited forever would stall every
 * SMTP session of the process. The failed batch is written again message by message, and only
 * a message that still cannot get its locks is answered 451 (its sender retries).
 */
const LOCK_TIMEOUT = '5s'

async function prepare(ctx: AppContext, msg: InboundMessage, resolver: Resolver): Promise<PreparedMessage> {
  // The recipients of RCPT stand: a storage limit is checked when the copy is stored.
  const known = msg.recipients
  const [recipients, { mail, extracted, auth, searchLexemes }] = await Promise.all([
    known?.every(r => r !== undefined) ? (known as ResolvedRecipient[]) : resolveRecipients(ctx, msg.rcptTo),
    inboundThreads(ctx).prepare(msg.raw, { ip: msg.remoteIp, helo: msg.helo, mailFrom: msg.mailFrom, mta: ctx.config.SMTP_HOSTNAME }, resolver),
  ])
  // One copy per organization. A recipient looked up again whose mailbox went since RCPT is skipped.
  const copies = new Map<string, PreparedMessage['copies'][number]>()
  for (const r of recipients) {
    if (!('orgId' in r)) continue
    if (copies.has(r.orgId)) copies.get(r.orgId)!.rcptTo.push(r.address)
    else copies.set(r.orgId, { orgId: r.orgId, rcptTo: [r.address], storageLimit: r.storageLimit })
  }
  // a report that cannot be read is stored as the machine mail it is, unmatched
  const report = isReport(mail.contentType) ? await parseReport(msg.raw).catch(() => null) : null
  const eventType = classify(mail, msg.mailFrom, report)
  return { msg, mail, extracted, searchLexemes, auth, eventType, digest: resendDigest(msg, mail.messageId), report, copies: [...copies.values()] }
}

/** What a message sent again gets: nothing stored now (receipts.ts). */
const RESENT: IngestResult = { stored: [], refused: [], resent: true }

/** Stores a batch of prepared messages in one transaction; returns what became of each message's copies. */
async function storeBatch(ctx: AppContext, batch: PreparedMessage[]): Promise<IngestResult[]> {
  // Every message's statements are issued at once: postgres.js pipelines them on the
  // transaction's connection, and PostgreSQL runs them in issue order, so a reply stored later
  // in the batch finds the thread of a message stored earlier in it.
  const results = await ctx.sql.begin(async tx => {
    const consumers = ctx.plugins.receivedMail.map(consumer => consumer(ctx))
    const counted: StorageCounts = new Map()
    const changes: ChangeInput[] = []
    // sent now, so it is in force before the first store
    const lockTimeout = setLockTimeout(tx, LOCK_TIMEOUT).execute()
    // the messages sent again (receipts.ts) are known before any store is issued, so the stores keep the batch's order
    const fresh = await claimReceipts(
      tx,
      batch.map(p => p.digest),
    )
    // Every message's chain of statements settles before the transaction ends: with the first
    // failure postgres.js rolls back, and a statement a chain sent after that would run outside
    // the transaction and commit on its own. Once one statement failed, every later one of the
    // transaction fails too, so waiting for all of them is short.
    const store = (p: PreparedMessage, i: number) => (fresh[i] ? storeCopies(tx, ctx, p, consumers, counted, changes) : Promise.resolve(RESENT))
    const settled = await Promise.allSettled([lockTimeout, ...batch.map(store)])
    const failed = settled.find(r => r.status === 'rejected')
    if (failed) throw failed.reason
    const results = settled.slice(1).map(r => (r as PromiseFulfilledResult<IngestResult>).value)
    // The counters of organizations without a limit move once per batch, at its end, so their
    // rows are locked only from then to the commit.
    const notified = mailSignals(results.flatMap(r => r.stored))
    if (notified.length) await countStored(tx, counted, notified)
    // last: the changes feed's counter rows stay locked only from here to the commit
    await recordChanges(tx, changes)
    return results
  })
  const stored = results.flatMap(r => r.stored)
  for (const [orgId, addresses] of addressesByOrg(stored)) {
    mailEvents(ctx).emit(orgId, addresses)
    mailEvents(ctx).emitChange(orgId)
  }
  return results
}

/** The envelope recipients of the stored copies, by organization. */
function addressesByOrg(stored: StoredEmail[]): Map<string, Set<string>> {
  const byOrg = new Map<string, Set<string>>()
  for (const email of stored) {
    const addresses = byOrg.get(email.orgId) ?? new Set()
    for (const a of email.rcptTo) addresses.add(a)
    byOrg.set(email.orgId, addresses)
  }
  return byOrg
}

/** One new-mail signal per organization of a batch, naming its copies' recipients. */
const mailSignals = (stored: StoredEmail[]) => [...addressesByOrg(stored)].map(([orgId, addresses]) => mailSignal(orgId, addresses))

/**
 * `counted` collects the copies of organizations without a storage limit, for countStored;
 * `changes` the feed's record of each copy, written at the end of the batch.
 */
async function storeCopies(
  tx: Tx,
  ctx: AppContext,
  p: PreparedMessage,
  consumers: ReturnType<ReceivedMailConsumer>[],
  counted: StorageCounts,
  changes: ChangeInput[],
): Promise<IngestResult> {
  const out: IngestResult = { stored: [], refused: [] }
  const bytes = p.msg.raw.byteLength
  for (const { orgId, rcptTo, storageLimit } of p.copies) {
    // A limited organization's copy is counted before it is stored, if it still fits: its
    // headroom may have gone to concurrent mail since it was read.
    if (storageLimit !== null && !(await reserveStorage(tx, orgId, bytes, storageLimit))) {
      out.refused.push(orgId)
      continue
    }
    const email = await storeEmail(ctx, tx, {
      orgId,
      direction: 'inbound',
      eventType: p.eventType,
      mail: p.mail,
      raw: p.msg.raw,
      mailFrom: p.msg.mailFrom,
      rcptTo,
      auth: p.auth,
      extracted: p.extracted,
      searchLexemes: p.searchLexemes,
      session: { remoteIp: p.msg.remoteIp, helo: p.msg.helo, tls: p.msg.tls },
      batched: true,
    })
    if (storageLimit === null) {
      const c = counted.get(orgId) ?? { bytes: 0, emails: 0 }
      counted.set(orgId, { bytes: c.bytes + bytes, emails: c.emails + 1 })
    }
    changes.push(receivedChange(email, p))
    // what the features do with received mail (webhook deliveries, x402 steps), in this transaction
    const copy: ReceivedCopy = { report: p.report, eventFields: {} }
    for (const received of consumers) changes.push(...((await received(tx, email, p.mail, copy)) ?? []))
    out.stored.push(email)
  }
  // every copy refused (storage full): the client is told to try again later, and that try must be taken
  if (p.digest && !out.stored.length) await releaseReceipt(tx, p.digest)
  return out
}

/** The feed's record of a stored copy; its id is the webhook event id of the email (selection.ts). */
function receivedChange(email: StoredEmail, p: PreparedMessage): ChangeInput {
  return {
    orgId: email.orgId,
    id: eventId(email.id),
    type: email.eventType,
    resource: { type: 'email', id: email.id },
    addresses: email.rcptTo,
    data: {
      email_id: email.id,
      thread_id: email.threadId,
      from: p.mail.from?.address ?? email.mailFrom,
      to: email.rcptTo,
      subject: p.mail.subject,
      size_bytes: email.sizeBytes,
    },
  }
}

/** The group commit that stores this process's inbound mail. */
export const inboundCommits = perProcess((ctx): InboundCommits => new GroupCommit(batch => storeBatch(ctx, batch)))

/**
 * Parses, authenticates and stores a message; resolves once it is committed. Logs one line.
 * `resolver` answers the authentication's DNS lookups (the local relay passes one that knows our
 * own DKIM records).
 */
export async function ingest(ctx: AppContext, msg: InboundMessage, resolver = ctx.resolver): Promise<IngestResult> {
  const started = performance.now()
  const prepared = await prepare(ctx, msg, resolver)
  const result: IngestResult = prepared.copies.length ? await inboundCommits(ctx).submit(prepared) : { stored: [], refused: [] }
  const { stored, refused } = result
  const { auth } = prepared
  const fields = {
    event_type: prepared.eventType,
    size_bytes: msg.raw.byteLength,
    stored: stored.map(e => ({ email_id: e.id, org_id: e.orgId })),
    refused_storage_full: refused,
    spf: auth.spf.result,
    dkim: auth.dkim.map(d => d.result),
    dmarc: auth.dmarc.result,
    ...(result.resent && { resent: true }),
    duration_ms: Math.round(performance.now() - started),
  }
  if (refused.length) log.warn('inbound message', fields)
  else log.info('inbound message', fields)
  return result
}
