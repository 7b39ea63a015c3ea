/** The outbox_messages table (mail/ owns it): the local relay's kept mail, one row per recipient (./outbox.ts). */
import type { Sql } from '../../db/client'
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

/** A row as it is inserted: the summary and the raw message text. */
export interface NewOutboxRow extends Omit<OutboxRow, 'created_at'> {
  raw: string
}

const SUMMARY = ['id', 'org_id', 'envelope_from', 'rcpt', 'subject', 'message_id', 'created_at']

export async function insertOutboxRows(sql: Sql, rows: NewOutboxRow[]): Promise<void> {
  await sql`insert into outbox_messages ${sql(rows)}`
}

/** The organization's outbox, newest first. */
export async function listOutbox(sql: Sql, orgId: string, page: PageRequest) {
  return listPage<OutboxRow>(sql, { columns: sql(SUMMARY), from: sql`outbox_messages`, where: sql`org_id = ${orgId}`, page })
}

/** One message of the organization with its raw text. */
export async function outboxMessageById(sql: Sql, orgId: string, id: string): Promise<(OutboxRow & { raw: string }) | undefined> {
  const [row] = await sql<(OutboxRow & { raw: string })[]>`
    select ${sql([...SUMMARY, 'raw'])} from outbox_messages where id = ${id} and org_id = ${orgId}`
  return row
}
