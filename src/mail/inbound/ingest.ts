/**
 * An accepted SMTP transaction becomes stored mail: parsed and authenticated once, then one
 * copy per recipient organization, each with its thread, storage accounting and webhook
 * deliveries (with their jobs), all committed before `ingest` returns, so the caller's `250`
 * always follows the commit.
 *
 * The work splits in two. `prepare` is the per-message CPU and DNS work (postal-mime,
 * SPF/DKIM/DMARC/ARC with mailauth, the recipients' organizations); it runs in the SMTP session
 * that received the message, concurrently with the others. The writes go through the
 * context's group commit: the messages of concurrent sessions are stored in one transaction,
 * their statements pipelined, so the database sees one commit per batch instead of one per
 * message.
 */
import type { AppContext } from '../../context'
import type { Tx } from '../../db/client'
import { GroupCommit } from '../../db/group-commit'
import { log } from '../../log'
import { storeEmail, type StoredEmail } from '../store'
import { enqueueDeliveries, routingCache } from '../../webhooks/selection'
import { authenticateMessage, type AuthVerdicts } from './authenticate'
import { classify, type EmailEventType } from './classify'
import { parseMail, type ParsedMail } from './parse'
import { resolveRecipients, type ResolvedRecipient } from './recipients'

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
}

/** A message parsed, authenticated and assigned to organizations: everything but the writes. */
interface PreparedMessage {
  msg: InboundMessage
  mail: ParsedMail
  auth: AuthVerdicts
  eventType: EmailEventType
  /** each accepting organization with its envelope recipients */
  copies: { orgId: string; rcptTo: string[] }[]
  refused: string[]
}

export type InboundCommits = GroupCommit<PreparedMessage, StoredEmail[]>

/**
 * The longest a batch waits for a row lock (an organization's counters, a thread) before it
 * fails: one batch is written at a time, so a batch that waited forever would stall every
 * SMTP session of the process. The failed batch is written again message by message, and only
 * a message that still cannot get its locks is answered 451 (its sender retries).
 */
const LOCK_TIMEOUT = '5s'

async function prepare(ctx: AppContext, msg: InboundMessage): Promise<PreparedMessage> {
  // The recipients of RCPT stand, unless one has a storage limit: its headroom is read again,
  // since the other sessions' mail may have used it up since.
  const known = msg.recipients
  const reuse = known?.every(r => r && r.headroom === null)
  const [recipients, mail, auth] = await Promise.all([
    reuse ? (known as ResolvedRecipient[]) : resolveRecipients(ctx, msg.rcptTo),
    parseMail(msg.raw),
    authenticateMessage(msg.raw, { ip: msg.remoteIp, helo: msg.helo, mailFrom: msg.mailFrom, mta: ctx.config.SMTP_HOSTNAME }, ctx.resolver),
  ])
  // The headroom is checked against the real size (RCPT knew at most the declared SIZE). A
  // recipient looked up again whose mailbox went since RCPT is skipped.
  const copies = new Map<string, string[]>()
  const refused = new Set<string>()
  for (const r of recipients) {
    if (!('orgId' in r)) continue
    if (r.headroom !== null && r.headroom < msg.raw.byteLength) refused.add(r.orgId)
    else copies.set(r.orgId, [...(copies.get(r.orgId) ?? []), r.address])
  }
  return {
    msg,
    mail,
    auth,
    eventType: classify(mail, msg.mailFrom),
    copies: [...copies].map(([orgId, rcptTo]) => ({ orgId, rcptTo })),
    refused: [...refused],
  }
}

/** Stores a batch of prepared messages in one transaction; returns each message's stored copies. */
async function storeBatch(ctx: AppContext, batch: PreparedMessage[]): Promise<StoredEmail[][]> {
  // Every message's statements are issued at once: postgres.js pipelines them on the
  // transaction's connection, and PostgreSQL runs them in issue order, so a reply stored later
  // in the batch finds the thread of a message stored earlier in it.
  const stored = await ctx.sql.begin(async tx => {
    const routing = routingCache()
    // sent now, so it is in force before the first store
    const lockTimeout = tx`select set_config('lock_timeout', ${LOCK_TIMEOUT}, true)`.execute()
    // Every message's chain of statements settles before the transaction ends: with the first
    // failure postgres.js rolls back, and a statement a chain sent after that would run outside
    // the transaction and commit on its own. Once one statement failed, every later one of the
    // transaction fails too, so waiting for all of them is short.
    const settled = await Promise.allSettled([lockTimeout, ...batch.map(p => storeCopies(tx, ctx, p, routing))])
    const failed = settled.find(r => r.status === 'rejected')
    if (failed) throw failed.reason
    return settled.slice(1).map(r => (r as PromiseFulfilledResult<StoredEmail[]>).value)
  })
  for (const email of stored.flat()) ctx.mailEvents.emit(email.orgId)
  return stored
}

async function storeCopies(tx: Tx, ctx: AppContext, p: PreparedMessage, routing: ReturnType<typeof routingCache>): Promise<StoredEmail[]> {
  const out: StoredEmail[] = []
  for (const { orgId, rcptTo } of p.copies) {
    const email = await storeEmail(tx, {
      orgId, direction: 'inbound', eventType: p.eventType, mail: p.mail, raw: p.msg.raw, mailFrom: p.msg.mailFrom, rcptTo, auth: p.auth,
      session: { remoteIp: p.msg.remoteIp, helo: p.msg.helo, tls: p.msg.tls },
    })
    await enqueueDeliveries(tx, ctx, email, p.mail, routing)
    out.push(email)
  }
  return out
}

/** The group commit that stores inbound mail for this context's database. */
export function inboundCommits(ctx: AppContext): InboundCommits {
  return new GroupCommit(batch => storeBatch(ctx, batch))
}

/** Parses, authenticates and stores a message; resolves once it is committed. Logs one line. */
export async function ingest(ctx: AppContext, msg: InboundMessage): Promise<IngestResult> {
  const started = performance.now()
  const prepared = await prepare(ctx, msg)
  const stored = prepared.copies.length ? await ctx.inboundCommits.submit(prepared) : []
  const { auth, refused } = prepared
  const fields = {
    event_type: prepared.eventType,
    size_bytes: msg.raw.byteLength,
    stored: stored.map(e => ({ email_id: e.id, org_id: e.orgId })),
    refused_storage_full: refused,
    spf: auth.spf.result,
    dkim: auth.dkim.map(d => d.result),
    dmarc: auth.dmarc.result,
    duration_ms: Math.round(performance.now() - started),
  }
  if (refused.length) log.warn('inbound message', fields)
  else log.info('inbound message', fields)
  return { stored, refused }
}
