/** The local outbox: mail the local relay kept instead of sending, one row per recipient. */
import { randomUUIDv7 } from 'bun'
import type { Sql } from '../../db/client'
import { errors } from '../../errors'
import { listPage, type PageRequest } from '../../http/pagination'

export interface OutboxRow {
  id: string
  org_id: string | null
  envelope_from: string
  rcpt: string
  subject: string | null
  message_id: string | null
  created_at: Date
}

const SUMMARY = ['id', 'org_id', 'envelope_from', 'rcpt', 'subject', 'message_id', 'created_at']

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
  await sql`insert into outbox_messages ${sql(rows)}`
  return rows.map(r => r.id)
}

/** The organization's outbox, newest first. */
export async function listOutbox(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<OutboxRow>(sql, { columns: sql(SUMMARY), from: sql`outbox_messages`, where: sql`org_id = ${orgId}`, page })
}

/** One message with its raw text; another organization's is not_found. */
export async function getOutbox(sql: Sql, orgId: string, id: string): Promise<OutboxRow & { raw: string }> {
  const [row] = await sql<(OutboxRow & { raw: string })[]>`
    select ${sql([...SUMMARY, 'raw'])} from outbox_messages where id = ${id} and org_id = ${orgId}`
  if (!row) throw errors.notFound('outbox message')
  return row
}
