/** The local outbox: mail the local relay kept instead of sending, one row per recipient. */
import { randomUUIDv7 } from 'bun'
import type { Sql } from '../../db/client'
import { errors } from '../../errors'
import { insertOutboxRows, outboxMessageById, type OutboxRow } from './outbox-queries'

export async function insertOutbox(
  sql: Sql,
  m: { orgId: string | null; envelopeFrom: string; rcpts: string[]; subject: string | null; messageId: string | null; raw: string },
): Promise<string[]> {
  const rows = m.rcpts.map(rcpt => ({
    id: randomUUIDv7(),
    org_id: m.orgId,
    envelope_from: m.envelopeFrom,
    rcpt,
    subject: m.subject,
    message_id: m.messageId,
    raw: m.raw,
  }))
  await insertOutboxRows(sql, rows)
  return rows.map(r => r.id)
}

/** One message with its raw text; another organization's is not_found. */
export async function getOutbox(sql: Sql, orgId: string, id: string): Promise<OutboxRow & { raw: string }> {
  const row = await outboxMessageById(sql, orgId, id)
  if (!row) throw errors.notFound('outbox message')
  return row
}
