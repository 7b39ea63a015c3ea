/**
 * Two stages for inbound mail. The SMTP transaction only commits the message as received and
 * an ingest job (`acceptInbound`), so the `250` costs one statement and never waits on DNS
 * lookups for SPF or DKIM; the `mail.ingest` job then parses, authenticates, stores and routes
 * it (`ingest`) and removes it from the queue in the same transaction, so it is processed
 * exactly once. A crash between the stages loses nothing: the job is still there.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../../context'
import { enqueueWith } from '../../jobs/queue'
import { log } from '../../log'
import { ingest, type InboundMessage } from './ingest'

export const INGEST_KIND = 'mail.ingest'

/** Commits the message and its ingest job (one statement); returns the queue id (the SMTP "queued as" id). */
export async function acceptInbound(ctx: AppContext, msg: InboundMessage): Promise<string> {
  const id = randomUUIDv7()
  const queued = ctx.sql`
    insert into inbound_queue (id, raw, mail_from, rcpt_to, remote_ip, helo, tls)
    values (${id}, ${msg.raw}, ${msg.mailFrom}, ${msg.rcptTo}, ${msg.remoteIp}, ${msg.helo ?? null}, ${msg.tls})`
  await enqueueWith(ctx.sql, queued, INGEST_KIND, { queue_id: id })
  return id
}

interface QueuedRow {
  raw: Buffer
  mail_from: string
  rcpt_to: string[]
  remote_ip: string
  helo: string | null
  tls: boolean
}

export const ingestJob = {
  kind: INGEST_KIND,
  async handle(ctx: AppContext, payload: { queue_id: string }) {
    const [row] = await ctx.sql<QueuedRow[]>`select raw, mail_from, rcpt_to, remote_ip, helo, tls from inbound_queue where id = ${payload.queue_id}`
    if (!row) return // processed already: the row goes with the stored message
    const result = await ingest(ctx, {
      raw: new Uint8Array(row.raw),
      mailFrom: row.mail_from,
      rcptTo: row.rcpt_to,
      remoteIp: row.remote_ip,
      helo: row.helo ?? undefined,
      tls: row.tls,
      queueId: payload.queue_id,
    })
    log.debug('inbound processed', { queue_id: payload.queue_id, stored: result.stored.length, refused: result.refused.length })
  },
}
