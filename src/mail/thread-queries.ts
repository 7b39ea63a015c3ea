/**
 * The threads table's part in storing a message (mail/ owns it). Threads group messages by their Message-ID references (In-Reply-To, References). Only when
 * a reply carries no reference we know, it joins the latest recent thread with the same
 * subject in which its sender already took part: subject alone is the last resort.
 */
import { randomUUIDv7 } from 'bun'
import type postgres from 'postgres'
import type { Tx } from '../db/client'

const REPLY_PREFIX = /^\s*((re|fw|fwd|aw|sv|vs|antw|wg|tr)(\[\d+\])?\s*:\s*)+/i
const SUBJECT_MATCH_DAYS = 30

export function subjectKey(subject: string): string {
  return subject.replace(REPLY_PREFIX, '').replace(/\s+/g, ' ').trim().toLowerCase()
}

export interface ThreadInput {
  orgId: string
  subject: string
  messageIds: string[]
  participants: string[]
  sender: string | null
  at: Date
  /** the thread the message goes to whatever its headers say (a reply we send) */
  threadId?: string
}

/**
 * The thread of a new message as common table expressions for the statement that stores it,
 * ending in `thread (id)`: the given thread, else the thread of the newest message it
 * references, else (a reply only) the latest recent thread with its subject key in which its
 * sender took part. That thread's counters and participants are updated, or a new thread is
 * inserted.
 *
 * The referenced messages are found first, one lookup per Message-ID (materialized) in the
 * (message_id, org_id) index, and only then ordered. The organization is checked outside the
 * lookup (`offset 0` keeps the condition out of it), so no plan can read the organization's
 * mail and filter it by Message-ID, as PostgreSQL may choose while its statistics take the
 * table for empty: written `org_id = ... and message_id = any(...)`, or ordered `by id desc
 * limit 1` in one query, that read every message of the organization for each reply.
 *
 * A message that references nothing (most new mail) looks nothing up: its statement is another
 * text, prepared apart, with no lookup in it. postgres.js prepares statements and PostgreSQL
 * keeps a generic plan after five executions; one made while a table was nearly empty may
 * scan it whole, and stays until the table's statistics change. The worker's statistics job
 * (src/maintenance/planner.job.ts) analyzes a table as it grows, which replaces such plans.
 */
export function threadCtes(sql: Tx, m: ThreadInput): postgres.Fragment {
  const key = subjectKey(m.subject)
  const byReference = m.messageIds.length
    ? sql`
      referenced as materialized (
        select e.id, e.thread_id from unnest(${m.messageIds}::text[]) as r (message_id)
         cross join lateral (select id, thread_id, org_id from emails where message_id = r.message_id offset 0) e
         where e.org_id = ${m.orgId}),
      by_reference as (select thread_id from referenced order by id desc limit 1)`
    : sql`by_reference as (select null::uuid as thread_id where false)`
  const hit = m.threadId
    ? sql`hit as (select ${m.threadId}::uuid as id)`
    : sql`
      ${byReference},
      by_subject as (
        select id from threads
         where ${Boolean(key && m.sender && REPLY_PREFIX.test(m.subject))} and not exists (select from by_reference)
           and org_id = ${m.orgId} and subject_key = ${key} and ${m.sender} = any(participants)
           and last_message_at > now() - make_interval(days => ${SUBJECT_MATCH_DAYS})
         order by last_message_at desc limit 1),
      hit as (select thread_id as id from by_reference union all select id from by_subject)`
  return sql`
    ${hit},
    joined as (
      update threads set message_count = message_count + 1,
             last_message_at = greatest(last_message_at, ${m.at}),
             participants = array(select distinct unnest(participants || ${m.participants}::text[]))
       where id = (select id from hit)),
    created as (
      insert into threads (id, org_id, subject, subject_key, participants, message_count, last_message_at)
      select ${randomUUIDv7()}::uuid, ${m.orgId}::uuid, ${m.subject}::text, ${key}::text, ${[...new Set(m.participants)]}::text[], 1, ${m.at}::timestamptz
       where not exists (select from hit)
      returning id),
    thread as (select id from hit union all select id from created)`
}
