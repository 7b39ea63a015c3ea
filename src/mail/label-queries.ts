/**
 * The labels of stored mail (the `labels` column of `emails`, sql/0045): what a message gets when
 * it is stored, the conditions of a list filtered by labels, and the one statement that changes
 * the labels of some messages. The rules (which names exist, read and unread exclusive) are the
 * labels feature's (src/labels/); these statements only apply them.
 */
import type postgres from 'postgres'
import type { Tx } from '../db/client'

/** The labels the service sets: `inbound` and `sent` by direction, `unread` and `read` the read state. */
export const SYSTEM_LABELS = ['inbound', 'sent', 'unread', 'read'] as const

/** A stored message's first labels, sorted: received mail is unread until marked read; a sent copy is `sent`. */
export const arrivalLabels = (direction: 'inbound' | 'outbound'): string[] => (direction === 'inbound' ? ['inbound', 'unread'] : ['sent'])

/**
 * A message has this label. A system label is written as a literal, never a parameter: `unread`
 * is the predicate of emails_unread_idx (sql/0045), which a parameter would not match in a
 * prepared statement's generic plan, and the others are common enough that the planner, knowing
 * which label it is, walks the organization's mail newest first (emails_org_idx) instead of
 * sorting them all. A custom label is a parameter, read through emails_labels_idx.
 */
export const hasLabel = (sql: Tx, label: string, alias = '') => {
  const column = sql(alias ? `${alias}.labels` : 'labels')
  switch (label) {
    case 'unread':
      return sql`${column} @> '{unread}'::text[]`
    case 'read':
      return sql`${column} @> '{read}'::text[]`
    case 'inbound':
      return sql`${column} @> '{inbound}'::text[]`
    case 'sent':
      return sql`${column} @> '{sent}'::text[]`
    default:
      return sql`${column} @> array[${label}::text]`
  }
}

/** Whether a list filtered by these labels reads emails_labels_idx (a custom label), which holds the organization as text. */
export const needsLabelIndex = (labels: readonly string[]) => labels.some(l => !(SYSTEM_LABELS as readonly string[]).includes(l))

/** The organization's mail, written as the index that serves a filter by these labels holds the organization. */
const ofOrg = (sql: Tx, orgId: string, labels: readonly string[], alias: string) =>
  needsLabelIndex(labels) ? sql`${sql(`${alias}.org_id`)}::text = ${orgId}::text` : sql`${sql(`${alias}.org_id`)} = ${orgId}`

/** The union of the labels of a thread's messages, sorted: a column of a statement over `threads` (its alias `t`). */
export const threadLabelsColumn = (sql: Tx, thread: string) =>
  sql`array(select distinct l from emails e cross join unnest(e.labels) l where e.thread_id = ${sql(thread)} order by 1)`

/** Threads with at least one message of each label (the union of their messages' labels holds them all). */
export const threadsWithLabels = (sql: Tx, orgId: string, labels: readonly string[], idColumn = 'id') =>
  labels.reduce(
    (all, label) =>
      sql`${all} and ${sql(idColumn)} in (select e.thread_id from emails e where ${ofOrg(sql, orgId, [label], 'e')} and ${hasLabel(sql, label, 'e')})`,
    sql``,
  )

/** Which messages a relabel touches: some by id, or every message of a thread; of `address` only, when given. */
export type RelabelTarget = { ids: string[] } | { threadId: string }

export interface LabelChange {
  add: string[]
  remove: string[]
}

/** A message a relabel found: its labels before and after, and what the feed's event needs. */
export interface RelabeledRow {
  id: string
  thread_id: string
  direction: 'inbound' | 'outbound'
  rcpt_to: string[]
  from_address: string | null
  before: string[]
  labels: string[]
}

/**
 * Adds and removes labels on the organization's messages in one statement: the rows are locked
 * in id order (two batches never wait on each other in a cycle), each gets its new sorted set,
 * and only those whose set changed are written. Returns every message found, in id order.
 */
export function relabelEmails(tx: Tx, orgId: string, target: RelabelTarget, change: LabelChange, where: postgres.Fragment) {
  const which = 'ids' in target ? tx`id = any(${target.ids}::uuid[])` : tx`thread_id = ${target.threadId}`
  return tx<RelabeledRow[]>`
    with found as (
      select id, thread_id, direction, rcpt_to, from_address, labels as before,
             array(select distinct l from unnest(labels || ${change.add}::text[]) l where l <> all(${change.remove}::text[]) order by 1) as labels
        from emails
       where ${which} and org_id = ${orgId} ${where}
       order by id
         for update),
    written as (
      update emails e set labels = f.labels from found f
       where e.id = f.id and not (f.labels @> f.before and f.before @> f.labels))
    select * from found order by id`
}

/** Takes a deleted custom label off every message of the organization that has it. */
export async function dropLabelFromMail(tx: Tx, orgId: string, label: string): Promise<number> {
  const rows = await tx`
    update emails set labels = array_remove(labels, ${label}::text)
     where org_id::text = ${orgId}::text and labels @> array[${label}::text]`
  return rows.count
}
