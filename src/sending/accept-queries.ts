/**
 * The statements of POST /v1/send-mail's accept path (service.ts): what a send's checks read, in
 * one statement; the Idempotency-Keys of a batch of sends, locked; and the insert of the sends,
 * which `enqueueEachWith` joins to their jobs.
 */
import { isVerifiedDomainOf } from '../domains/queries'
import { inboxDisplayName, isInboxOf } from '../mail/inbox-queries'
import { emailsAs } from '../mail/email-queries'
import { orgsAs } from '../account/org-queries'
import type { Tx } from '../db/client'
import { isKeyRecorded } from '../http/idempotency-queries'
import { splitAddress } from '../mail/inbound/recipients'
import type { SendRow } from './model'
import { countedSends } from './send-count-queries'
import { suppressedColumn, type Suppressed } from './report-queries'

/**
 * What the checks of a send need, in one statement: is `from` a sender of the organization, its
 * send counts and own limits; and the display name of the inbox `from` is, if it is one.
 */
export interface SendFactsRow {
  /** a live record of the request's Idempotency-Key exists (the request is answered from it) */
  recorded: boolean
  sender: boolean
  display_name: string | null
  hour: number
  day: number
  per_hour: number | null
  per_day: number | null
  /** the entries of the recipients on the suppression list */
  suppressed: Suppressed[]
}

/** The facts of a send from `from` to `recipients` under the key `idem` (`sendFacts` in service.ts). */
export async function readSendFacts(tx: Tx, orgId: string, from: string, recipients: string[], idem: { scope: string; key: string }): Promise<SendFactsRow> {
  const address = from.toLowerCase()
  const [facts] = await tx<SendFactsRow[]>`
    select ${isKeyRecorded(tx, idem.scope, idem.key)} as recorded,
           ${isInboxOf(tx, tx`o.id`, address)} or ${isVerifiedDomainOf(tx, tx`o.id`, splitAddress(address).domain)} as sender,
           ${inboxDisplayName(tx, tx`o.id`, address)} as display_name,
           ${countedSends(tx, tx`o.id`)},
           o.send_per_hour_override as per_hour, o.send_per_day_override as per_day,
           ${suppressedColumn(tx, tx`o.id`, recipients)}
      from ${orgsAs(tx, 'o')}
     where o.id = ${orgId}`
  return facts!
}

/**
 * Tries the transaction-scoped advisory lock of each name (a key's scope and key), in order:
 * whether each was taken. Sent at once, ahead of the statements that must see what a holder of
 * a key committed before its lock was taken.
 */
export const tryLockKeys = (tx: Tx, names: string[]) =>
  tx<{ locked: boolean }[]>`
    select pg_try_advisory_xact_lock(hashtextextended(k, 0)) as locked from unnest(${names}::text[]) with ordinality as u(k, n) order by n`.execute()

/**
 * The insert of sends (for enqueueEachWith, which adds their jobs to the statement). The email
 * stored for a send (its `email_id`) by a statement just before, in the same transaction and
 * round trip, gives it its thread, which is not known before that statement has run.
 */
export function insertSends(tx: Tx, sends: { row: SendRow; emailId: string | null }[]) {
  const rows = sends.map(({ row, emailId }) => ({
    id: row.id,
    org_id: row.org_id,
    status: row.status,
    request: row.request,
    from_address: row.from_address,
    scheduled_at: row.scheduled_at,
    repeat_every_minutes: row.repeat_every_minutes,
    thread_id: row.thread_id,
    ticks: row.ticks,
    email_id: emailId,
    last_message_id: row.last_message_id,
  }))
  return tx`
    insert into sends (id, org_id, status, request, from_address, scheduled_at, repeat_every_minutes, thread_id, ticks, last_email_id, last_message_id)
    select s.id, s.org_id, s.status, s.request, s.from_address, s.scheduled_at, s.repeat_every_minutes, coalesce(e.thread_id, s.thread_id), s.ticks, e.id, s.last_message_id
      from jsonb_to_recordset(${tx.json(rows as never)}::jsonb)
        as s(id uuid, org_id uuid, status text, request jsonb, from_address text, scheduled_at timestamptz, repeat_every_minutes int, thread_id uuid, ticks int, email_id uuid, last_message_id text)
      left join ${emailsAs(tx, 'e')} on e.id = s.email_id`
}
