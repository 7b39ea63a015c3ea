/** The statements of the sends table that other features call (x402's email interactions find their challenge's send). */
import type { Tx } from '../db/client'

/** The Message-ID the send `sendId` last went out with; null before it went, undefined when there is no such send. */
export async function lastMessageIdOf(sql: Tx, sendId: string | null): Promise<string | null | undefined> {
  const [row] = await sql<{ message_id: string | null }[]>`select last_message_id as message_id from sends where id = ${sendId}`
  return row?.message_id
}

/** The ids of the organization's sends whose last Message-ID is among `messageIds`, as a subquery (`where x.send_id in ${...}`). */
export const sendsWithMessageIds = (sql: Tx, orgId: string, messageIds: string[]) =>
  sql`(select s.id from sends s where s.org_id = ${orgId} and s.last_message_id = any(${messageIds}))`
