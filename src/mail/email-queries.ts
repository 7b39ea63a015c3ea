/**
 * The statements of stored mail (`emails`, `email_contents`, `threads`) that the readers use:
 * lists, one message, raw bytes, threads, search, content discard. No other folder names these
 * tables; `emails/` presents what these return.
 */
import { contentDiscardEnabled, releaseStorage, storedEmailsCount } from '../account/orgs'
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { listPage, listPagesOf, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import type { AttachmentMeta, Mailbox } from './inbound/parse'
import type { AuthVerdicts } from './inbound/authenticate'
import { isQueryCanceled } from '../db/errors'
import { searchQuery, searchVector } from './search-text'
import { hasLabel, needsLabelIndex, threadLabelsColumn, threadsWithLabels } from './label-queries'

export const SEARCH_BUDGET_MS = 3_000

/** What list views read: everything but bodies, headers and envelope. */
const SUMMARY_COLUMNS = [
  'id',
  'thread_id',
  'direction',
  'event_type',
  'from_address',
  'from_name',
  'to_addresses',
  'cc_addresses',
  'subject',
  'received_at',
  'size_bytes',
  'attachments',
  'content_discarded_at',
  'labels',
]

export interface SummaryRow {
  id: string
  thread_id: string
  direction: 'inbound' | 'outbound'
  event_type: string
  from_address: string | null
  from_name: string | null
  to_addresses: Mailbox[]
  cc_addresses: Mailbox[]
  subject: string
  received_at: Date
  size_bytes: number
  attachments: AttachmentMeta[]
  content_discarded_at: Date | null
  /** sorted (sql/0045) */
  labels: string[]
}

/** The reply without its quotes, stored at ingest (sql/0043). */
export interface ExtractedRow {
  extracted_text: string | null
  extracted_html: string | null
}

export interface EmailRow extends SummaryRow, ExtractedRow {
  org_id: string
  message_id: string | null
  in_reply_to: string | null
  references: string[]
  reply_to: Mailbox[]
  sent_at: Date | null
  text_body: string | null
  html_body: string | null
  headers: { name: string; value: string }[]
  mail_from: string | null
  rcpt_to: string[]
  remote_ip: string | null
  helo: string | null
  tls: boolean
  auth: AuthVerdicts
}

export interface ThreadRow {
  id: string
  subject: string
  participants: string[]
  message_count: number
  last_message_at: Date
  created_at: Date
  /** the union of its messages' labels, sorted */
  labels: string[]
}

export interface EmailFilters {
  since: Date | null
  direction?: string
  threadId?: string
  eventType?: string
  /** only the mail of every one of these addresses (a connection key's bound address, an inbox, the `address` filter) */
  addresses: string[]
  /** only mail with every one of these labels */
  labels?: readonly string[]
}

/**
 * Mail of one address: inbound copies it was an envelope recipient of, outbound mail it sent.
 * The expression is emails_address_idx's (sql/0044), so the address's mail is read by index
 * (with the organization as text: listEmails).
 */
export function ofAddress(sql: Tx, address: string | undefined) {
  if (address === undefined) return sql``
  return sql`and (case when direction = 'inbound' then rcpt_to else array[lower(from_address)] end) @> array[${address.toLowerCase()}::text]`
}

/** A page of mail, newest first; `extracted` adds each message's new content (include_extracted=true). */
export async function listEmails(sql: Sql, orgId: string, page: PageRequest, f: EmailFilters, extracted = false) {
  // The organization as emails_address_idx and emails_labels_idx hold it when an address or a
  // custom label filters the list: no other index serves it, whatever the statistics say of the
  // organization (sql/0044, 0045); system labels read emails_unread_idx or emails_org_idx.
  const labels = f.labels ?? []
  const matching = sql`
    ${f.addresses.length || needsLabelIndex(labels) ? sql`org_id::text = ${orgId}::text` : sql`org_id = ${orgId}`}
    ${f.addresses.reduce((all, a) => sql`${all} ${ofAddress(sql, a)}`, sql``)}
    ${labels.reduce((all, l) => sql`${all} and ${hasLabel(sql, l)}`, sql``)}
    ${f.since ? sql`and received_at > ${f.since}` : sql``}
    ${f.direction ? sql`and direction = ${f.direction}` : sql``}
    ${f.threadId ? sql`and thread_id = ${f.threadId}` : sql``}
    ${f.eventType ? sql`and event_type = ${f.eventType}` : sql``}`
  // The counters kept with the mail give the totals of the whole mailbox and of a thread; any
  // other filter counts up to COUNT_CAP.
  const filtered = f.addresses.length > 0 || labels.length > 0 || f.since || f.direction || f.eventType
  const total = filtered
    ? 'capped'
    : f.threadId
      ? sql`select message_count from threads where id = ${f.threadId} and org_id = ${orgId}`
      : storedEmailsCount(sql, orgId)
  const columns = extracted ? [...SUMMARY_COLUMNS, 'extracted_text', 'extracted_html'] : SUMMARY_COLUMNS
  return listPage<SummaryRow & Partial<ExtractedRow>>(sql, { columns: sql(columns), from: sql`emails`, where: matching, page, total })
}

/** One message of the organization (of `address` only, when given); anything else is not_found. */
export async function getEmail(sql: Sql, orgId: string, id: string, address?: string): Promise<EmailRow> {
  const [row] = await sql<EmailRow[]>`select * from emails where id = ${id} and org_id = ${orgId} ${ofAddress(sql, address)}`
  if (!row) throw errors.notFound('email')
  return row
}

/** The exact bytes stored for the message; not_found once its content was discarded. */
export async function rawMessage(sql: Sql, orgId: string, id: string): Promise<Uint8Array> {
  const [row] = await sql<{ raw: Buffer | null; discarded: boolean }[]>`
    select c.raw, e.content_discarded_at is not null as discarded
      from emails e left join email_contents c on c.email_id = e.id
     where e.id = ${id} and e.org_id = ${orgId}`
  if (!row) throw errors.notFound('email')
  if (!row.raw) throw errors.notFound('email content (discarded)')
  return new Uint8Array(row.raw)
}

/** Irreversibly removes the stored content of a message, keeping its metadata; needs the organization's opt-in. */
export async function discardContent(sql: Sql, orgId: string, id: string) {
  return sql.begin(async tx => {
    const enabled = await contentDiscardEnabled(tx, orgId)
    const [email] = await tx<
      { size_bytes: number; content_discarded_at: Date | null; subject: string | null; from_name: string | null; from_address: string | null }[]
    >`
      select size_bytes, content_discarded_at, subject, from_name, from_address from emails where id = ${id} and org_id = ${orgId} for update`
    if (!email) throw errors.notFound('email')
    if (!enabled) {
      throw new ApiError('discard_not_enabled', 'content discard: not enabled for this organization (it is irreversible, so it needs an opt-in)')
    }
    if (!email.content_discarded_at) {
      await tx`delete from email_contents where email_id = ${id}`
      await tx`
        update emails set text_body = null, html_body = null, extracted_text = null, extracted_html = null, headers = '[]', attachments = '[]', content_discarded_at = now(),
                          search = ${searchVector({ subject: email.subject, fromName: email.from_name, fromAddress: email.from_address, text: null })}::tsvector
         where id = ${id}`
      await releaseStorage(tx, orgId, email.size_bytes)
    }
    const [row] = await tx<{ at: Date }[]>`select content_discarded_at as at from emails where id = ${id}`
    return { id, content_discarded_at: iso(row!.at)! }
  })
}

/** The columns of a thread as the readers return it (`t` the alias of threads), its labels the union of its messages'. */
const threadColumns = (sql: Tx) =>
  sql`t.id, t.subject, t.participants, t.message_count, t.last_message_at, t.created_at, ${threadLabelsColumn(sql, 't.id')} as labels`

/** A page of threads, newest first; of those whose messages carry every one of `labels`, when given. */
export async function listThreads(sql: Sql, orgId: string, page: PageRequest, labels: readonly string[] = []) {
  return listPage<ThreadRow>(sql, {
    columns: threadColumns(sql),
    from: sql`threads t`,
    where: sql`t.org_id = ${orgId} ${threadsWithLabels(sql, orgId, labels, 't.id')}`,
    idColumn: 't.id',
    page,
    total: 'capped',
  })
}

/** A thread of the organization and its messages (summaries, oldest first); not_found for any other. */
export async function findThread(sql: Sql, orgId: string, id: string): Promise<{ thread: ThreadRow; emails: SummaryRow[] }> {
  const [thread] = await sql<ThreadRow[]>`select ${threadColumns(sql)} from threads t where t.id = ${id} and t.org_id = ${orgId}`
  if (!thread) throw errors.notFound('thread')
  // The thread is the organization's, so are its messages. (With `and org_id = ...` here the
  // planner may intersect the thread's index entries with all of the organization's.)
  const emails = await sql<SummaryRow[]>`
    select ${sql(SUMMARY_COLUMNS)}
      from emails where thread_id = ${id} order by id`
  return { thread, emails }
}

/** Messages by id, in any order, for readers that batch (GraphQL); of `address` only, when given. */
export async function emailsByIds(sql: Sql, orgId: string, ids: readonly string[], address?: string): Promise<EmailRow[]> {
  return sql<EmailRow[]>`select * from emails where id = any(${ids}::uuid[]) and org_id = ${orgId} ${ofAddress(sql, address)}`
}

/** Threads by id, in any order, for readers that batch (GraphQL). */
export async function threadsByIds(sql: Sql, orgId: string, ids: readonly string[]): Promise<ThreadRow[]> {
  return sql<ThreadRow[]>`select ${threadColumns(sql)} from threads t where t.id = any(${ids}::uuid[]) and t.org_id = ${orgId}`
}

/** A page of the messages (summaries, newest first) of each of several threads, in two statements. */
export function threadEmailPages(sql: Sql, orgId: string, threadIds: string[], page: PageRequest) {
  return listPagesOf<SummaryRow>(sql, {
    columns: sql(SUMMARY_COLUMNS),
    from: sql`emails`,
    where: sql`org_id = ${orgId}`,
    parentColumn: 'thread_id',
    parents: threadIds,
    page,
  })
}

/**
 * How many of the newest messages a search reads before it asks the index. A word in more than
 * one message in 40 fills a page from them; a rarer one is looked up in the index, which
 * returns its matches in no order, so a word in half the mailbox would sort half a million
 * rows there.
 */
const SEARCH_WINDOW = 2_000

/**
 * The most matches a search counts (`meta.total`; at the cap, "at least"). The index hands
 * over every match of a word before any is counted: counting a word in a tenth of a million
 * messages reads a hundred thousand index entries, in all of them most of a second. A word
 * with this many matches among the newest SEARCH_WINDOW messages (one in 20 or more) is not
 * counted further, and a rarer one has few enough matches for the index to count.
 */
export const SEARCH_COUNT_CAP = 100

/**
 * Full-text search over subject, sender and text (the `search` column, sql/0027, written by the
 * store from search-text.ts), newest first, within SEARCH_BUDGET_MS (504 search_timeout past
 * it). `q` is read as web search syntax (`searchQuery`): words (all must match), "a phrase",
 * `or`, `-word`; a search with no words finds nothing.
 */
export async function searchEmails(sql: Sql, orgId: string, q: string, page: PageRequest, budgetMs = SEARCH_BUDGET_MS) {
  const literal = searchQuery(q)
  if (literal === null) return { rows: [] as SummaryRow[], total: 0 }
  try {
    return await sql.begin(async tx => {
      const timeout = tx`select set_config('statement_timeout', ${String(budgetMs)}, true)`.execute()
      const query = tx`${literal}::tsquery`
      // The organization as emails_search_idx holds it: no other index serves these statements.
      const matching = tx`org_id::text = ${orgId}::text and search @@ ${query}`
      // The newest SEARCH_WINDOW messages of the mailbox, and those below the cursor.
      const window = (below: string | null) => tx<{ scanned: number; edge: string | null; hits: number; ids: string[] }[]>`
        with recent as materialized (
          select id, search from emails
           where org_id = ${orgId} ${below ? tx`and id < ${below}` : tx``}
           order by id desc limit ${SEARCH_WINDOW}),
        hit as materialized (select id from recent where search @@ ${query})
        select (select count(*)::int from recent) as scanned, (select id from recent order by id limit 1) as edge,
               (select count(*)::int from hit) as hits, array(select id from hit order by id desc limit ${page.limit + 1}) as ids`
      const [, [top], below] = await Promise.all([timeout, window(null), page.after ? window(page.after) : null])
      const recent = below?.[0] ?? top!
      let ids = recent.ids
      if (ids.length <= page.limit && recent.scanned === SEARCH_WINDOW) {
        const older = await tx<{ id: string }[]>`
          select id from emails where ${matching} and id < ${recent.edge} order by id desc limit ${page.limit + 1 - ids.length}`
        ids = [...ids, ...older.map(r => r.id)]
      }
      // All of the mailbox was in the window, or the window alone has SEARCH_COUNT_CAP matches.
      const total =
        top!.scanned < SEARCH_WINDOW || top!.hits >= SEARCH_COUNT_CAP
          ? Math.min(top!.hits, SEARCH_COUNT_CAP)
          : (await tx<{ total: number }[]>`select count(*)::int as total from (select from emails where ${matching} limit ${SEARCH_COUNT_CAP}) capped`)[0]!
              .total
      const rows = await tx<SummaryRow[]>`select ${tx(SUMMARY_COLUMNS)} from emails where id = any(${ids}::uuid[]) order by id desc`
      return { rows, total }
    })
  } catch (error) {
    // 57014: query_canceled, which is how statement_timeout ends a query
    if (isQueryCanceled(error)) throw new ApiError('search_timeout', `search: exceeded its ${budgetMs} ms budget; narrow the query`)
    throw error
  }
}

/**
 * The counters of a new contact from the mail already stored: one scan of the organization's
 * mail between the two addresses, when the contact is created.
 */
export const storedMailCounts = (tx: Tx, orgId: string, owner: string, address: string) => tx`
  select count(*) filter (where direction = 'inbound')::bigint as received,
         count(*) filter (where direction = 'outbound')::bigint as sent,
         min(received_at) as first_seen_at, max(received_at) as last_contacted_at
    from emails
   where org_id = ${orgId} and (
         (direction = 'inbound' and lower(from_address) = ${address} and exists (select 1 from unnest(rcpt_to) r where lower(r) = ${owner}))
      or (direction = 'outbound' and lower(from_address) = ${owner} and exists (select 1 from unnest(rcpt_to) r where lower(r) = ${address})))`

/** `emails` under `alias`, for a statement of another folder that joins a message in its own round trip. */
export const emailsAs = (sql: Tx, alias: string): postgres.Fragment => sql`emails ${sql(alias)}`

/** Which message to read: by id, of the organization when given (of `address` only, when given). */
interface EmailKey {
  id: string
  orgId?: string
  address?: string
}

const emailWhere = (sql: Tx, k: EmailKey, prefix = '') =>
  sql`${sql(`${prefix}id`)} = ${k.id} ${k.orgId === undefined ? sql`` : sql`and ${sql(`${prefix}org_id`)} = ${k.orgId}`} ${ofAddress(sql, k.address)}`

/** Some columns of one message, or null when there is none (of that organization, or address). */
export async function findEmail<K extends keyof EmailRow>(sql: Tx, key: EmailKey, columns: K[]): Promise<Pick<EmailRow, K> | null> {
  const [row] = await sql<Pick<EmailRow, K>[]>`select ${sql(columns as string[])} from emails where ${emailWhere(sql, key)}`
  return row ?? null
}

/** Some columns of one message and its stored bytes, or null when there is none or its content was discarded. */
export async function findEmailWithRaw<K extends keyof EmailRow>(
  sql: Tx,
  key: Omit<EmailKey, 'address'>,
  columns: K[],
): Promise<(Pick<EmailRow, K> & { raw: Buffer }) | null> {
  const [row] = await sql<(Pick<EmailRow, K> & { raw: Buffer })[]>`
    select ${sql(columns.map(c => `e.${c}`))}, c.raw
      from emails e join email_contents c on c.email_id = e.id
     where ${emailWhere(sql, key, 'e.')}`
  return row ?? null
}

/** The stored bytes of a message (null once discarded, or for none). */
export async function storedRaw(sql: Tx, emailId: string): Promise<Buffer | null> {
  const [row] = await sql<{ raw: Buffer }[]>`select raw from email_contents where email_id = ${emailId}`
  return row?.raw ?? null
}

/** The kind and authentication of the latest `limit` messages received from `address`, newest first. */
export function recentInboundFrom(sql: Tx, orgId: string, address: string, limit: number) {
  return sql<Pick<EmailRow, 'event_type' | 'auth'>[]>`
    select event_type, auth from emails
     where org_id = ${orgId} and direction = 'inbound' and from_address = ${address}
     order by id desc limit ${limit}`
}
