/**
 * Threads group messages by their Message-ID references (In-Reply-To, References). Only when
 * a reply carries no reference we know, it joins the latest recent thread with the same
 * subject in which its sender already took part: subject alone is the last resort.
 */
import { randomUUIDv7 } from 'bun'
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
}

/** The thread a new message belongs to (created if none), with its counters updated. */
export async function threadFor(tx: Tx, m: ThreadInput): Promise<string> {
  let threadId: string | undefined
  if (m.messageIds.length) {
    const [hit] = await tx<{ thread_id: string }[]>`
      select thread_id from emails
       where org_id = ${m.orgId} and message_id = any(${m.messageIds}::text[])
       order by id desc limit 1`
    threadId = hit?.thread_id
  }
  const key = subjectKey(m.subject)
  if (!threadId && key && m.sender && REPLY_PREFIX.test(m.subject)) {
    const [hit] = await tx<{ id: string }[]>`
      select id from threads
       where org_id = ${m.orgId} and subject_key = ${key} and ${m.sender} = any(participants)
         and last_message_at > now() - make_interval(days => ${SUBJECT_MATCH_DAYS})
       order by last_message_at desc limit 1`
    threadId = hit?.id
  }
  if (threadId) {
    await tx`
      update threads set message_count = message_count + 1,
             last_message_at = greatest(last_message_at, ${m.at}),
             participants = array(select distinct unnest(participants || ${m.participants}::text[]))
       where id = ${threadId}`
    return threadId
  }
  const id = randomUUIDv7()
  await tx`
    insert into threads (id, org_id, subject, subject_key, participants, message_count, last_message_at)
    values (${id}, ${m.orgId}, ${m.subject}, ${key}, ${[...new Set(m.participants)]}, 1, ${m.at})`
  return id
}
