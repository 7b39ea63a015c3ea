/**
 * The statements of a send once accepted (service.ts, execute.ts): its row read, the sent-email
 * operations' changes (reschedule, repeat, cancel), and what its executions write (the message
 * built, the relay's outcome).
 */
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import type { SendRow } from './model'

/** The send `id`, of any organization (the job's and the operations' read after a write). */
export async function sendById(sql: Tx, id: string): Promise<SendRow | undefined> {
  const [row] = await sql<SendRow[]>`select * from sends where id = ${id}`
  return row
}

/** The organization's send `id`; `lock` takes it for update. */
export async function sendOfOrg(sql: Tx, orgId: string, id: string, lock = false): Promise<SendRow | undefined> {
  const [row] = await sql<SendRow[]>`select * from sends where id = ${id} and org_id = ${orgId} ${lock ? sql`for update` : sql``}`
  return row
}

/** A page of the organization's sends, newest first. */
export const sendsPage = (sql: Sql, orgId: string, page: PageRequest) =>
  listPage<SendRow>(sql, { columns: sql`*`, from: sql`sends`, where: sql`org_id = ${orgId}`, page })

/** A scheduled send's new time. */
export async function rescheduleSend(tx: Tx, id: string, at: Date): Promise<void> {
  await tx`update sends set scheduled_at = ${at}, updated_at = now() where id = ${id}`
}

/** Stops a send's repeat at the sender's request. */
export async function stopRepeat(tx: Tx, id: string): Promise<void> {
  await tx`update sends set repeat_stopped_at = now(), repeat_stopped_by = 'sender', repeat_next_at = null, updated_at = now() where id = ${id}`
}

export async function setRepeatInterval(tx: Tx, id: string, everyMinutes: number): Promise<void> {
  await tx`update sends set repeat_every_minutes = ${everyMinutes}, updated_at = now() where id = ${id}`
}

/** Cancels a scheduled send. */
export async function cancelScheduled(tx: Tx, id: string): Promise<void> {
  await tx`update sends set status = 'canceled', repeat_next_at = null, updated_at = now() where id = ${id}`
}

/**
 * Records the message an execution built and stored (its email, Message-ID and thread) and
 * counts the tick; an immediate send stays `sending`, another becomes `executing`. Returns the
 * row as updated, undefined if the send is gone.
 */
export async function markBuilt(tx: Tx, id: string, built: { emailId: string; messageId: string; threadId: string }): Promise<SendRow | undefined> {
  const [row] = await tx<SendRow[]>`
    update sends set status = case when status = 'sending' then 'sending' else 'executing' end,
           last_email_id = ${built.emailId}, last_message_id = ${built.messageId}, thread_id = ${built.threadId},
           ticks = ticks + 1, updated_at = now()
     where id = ${id}
    returning *`
  return row
}

/** What an execution's relay answer sets on its send (`failed`: accepted, rejected and the next tick stay as they were). */
export interface OutcomeValues {
  id: string
  status: 'queued' | 'executed' | 'failed'
  accepted: string[] | null
  rejected: string[] | null
  relay_response: string | null
  error_code: string | null
  error_message: string | null
  repeat_next_at: Date | null
}

/** Sets the outcomes of several executions in one statement; returns the sends as updated (those still there). */
export const recordOutcomes = (tx: Tx, values: OutcomeValues[]) =>
  tx<SendRow[]>`
    update sends s set status = v.status,
           accepted = case when v.status <> 'failed' then v.accepted else s.accepted end,
           rejected = case when v.status <> 'failed' then v.rejected else s.rejected end,
           relay_response = v.relay_response, error_code = v.error_code, error_message = v.error_message,
           repeat_next_at = case when v.status <> 'failed' then v.repeat_next_at else s.repeat_next_at end,
           updated_at = now()
      from jsonb_to_recordset(${tx.json(values as never)}::jsonb)
        as v(id uuid, status text, accepted text[], rejected text[], relay_response text, error_code text, error_message text, repeat_next_at timestamptz)
     where s.id = v.id
    returning s.*`
