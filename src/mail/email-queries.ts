/**
 * The statements of stored mail (`emails`, `email_contents`, `threads`) that the readers use:
 * lists, one message, raw bytes, threads, search, content discard. No other folder names these
 * tables; `emails/` presents what these return.
 */
import { contentDiscardEnabled, releaseStorage, storedEmailsCount } from '../account/org-queries'
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { listPage, listPagesOf, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import type { AttachmentMeta, Mailbox } from './inbound/parse'
import type { AuthVerdicts } from './inbound/authenticate'
import { isQueryCanceled } from '../db/errors'
import { scopedQuery, searchQuery, searchVector } from './search-text'
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
                          search = ${searchVector({ orgId, subject: email.subject, fromName: email.from_name, fromAddress: email.from_address, text: null })}::tsvector
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
 * How many of the newest messages a search tests one by one before it asks the index: the square
 * root of SEARCH_WALK_RATIO times the mailbox (2,000 of 100,000, 6,325 of a million), at least
 * SEARCH_WALK_MIN. Testing a message costs about 3 µs of PostgreSQL's CPU; the ordered index
 * (sql/0049) about 1.2 µs per match of the word in the organization, all of which it sorts. A
 * word that does not fill a page among the newest W messages is in fewer than 101/W of them, so
 * the index sorts about 101·N/W matches: W = √(40·N) makes the two halves equal, and the worst
 * case about 2 × 3 µs × √(40·N) (12 ms at 100,000 messages, 38 ms at a million).
 */
const SEARCH_WALK_RATIO = 40
const SEARCH_WALK_MIN = 200

/** The ordered full-text index of a server with RUM (sql/0049); without it, emails_search_idx. */
const ORDERED_SEARCH_INDEX = 'emails_search_rum_idx'

/**
 * The most matches a search counts (`meta.total`; at the cap, "at least"): counting is finding
 * that many, from the newest message down, as a page does.
 */
export const SEARCH_COUNT_CAP = 100

/** A message in search order: newest received first, then the greater id. */
interface SearchHit {
  id: string
  received_at: Date
}

const newestFirst = (a: SearchHit, b: SearchHit) => b.received_at.getTime() - a.received_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/** The instant of a UUIDv7 id: a cursor's position when its message is gone. */
const idTime = (id: string) => new Date(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16))

/**
 * Full-text search over subject, sender and text (the `search` column, written by the store from
 * search-text.ts), newest received first, within SEARCH_BUDGET_MS (504 search_timeout past it).
 * `q` is read as web search syntax (`searchQuery`): words (all must match), "a phrase", `or`,
 * `-word`; a search with no words finds nothing.
 *
 * A page is found in two steps that together cost little for any word (docs/benchmarks.md, "Big
 * mailboxes"): the newest messages are tested one by one (a common word fills the page from
 * the first few), then, when the page is not full, the index gives the matches below them. With
 * RUM (sql/0049) the index hands them over newest first without reading the table; without it
 * (the embedded PGlite, a server without the extension) emails_search_idx gives them in no order
 * and they are sorted. Either index is asked for the word and the organization's lexeme
 * (`scopedQuery`), so it reads this organization's matches only, and the messages returned are
 * read by id within the organization.
 */
export async function searchEmails(sql: Sql, orgId: string, q: string, page: PageRequest, budgetMs = SEARCH_BUDGET_MS) {
  const literal = searchQuery(q)
  if (literal === null) return { rows: [] as SummaryRow[], total: 0 }
  try {
    return await sql.begin(async tx => {
      const timeout = tx`select set_config('statement_timeout', ${String(budgetMs)}, true)`.execute()
      const plain = tx`${literal}::tsquery`
      const scoped = tx`${scopedQuery(literal, orgId)}::tsquery`
      const walkSize = tx`(select greatest(${SEARCH_WALK_MIN}, ceil(sqrt(${SEARCH_WALK_RATIO} * emails_count)))::int from (${storedEmailsCount(tx, orgId)}) c)`

      /** The first `want` matches below `below` (from the newest, when null), in search order. */
      const collect = async (below: string | null, want: number): Promise<SearchHit[]> => {
        const position = below
          ? tx`and (received_at, id) < (coalesce((select received_at from emails where id = ${below} and org_id = ${orgId}), ${idTime(below)}), ${below}::uuid)`
          : tx``
        // the newest messages, each tested; the last of them (`edge`) returned too, hit or not
        const walked = await tx<(SearchHit & { hit: boolean; edge: boolean; ordered: boolean })[]>`
          select id, received_at, hit, n = ${walkSize} as edge, to_regclass(${ORDERED_SEARCH_INDEX}) is not null as ordered
            from (select id, received_at, search @@ ${plain} as hit, row_number() over (order by received_at desc, id desc) as n
                    from (select id, received_at, search from emails where org_id = ${orgId} ${position}
                           order by received_at desc, id desc limit ${walkSize}) newest) tested
           where hit or n = ${walkSize}
           limit ${want + 1}`
        const hits = walked.filter(r => r.hit)
        const edge = walked.at(-1)
        if (hits.length >= want || !edge?.edge) return hits
        const rest = want - hits.length
        const beyond = tx`search @@ ${scoped} and (received_at, id) < (${edge.received_at}, ${edge.id}::uuid)`
        // RUM orders by distance below the edge: ties of received_at are all taken, then sorted by id
        const older = await (edge.ordered
          ? tx<SearchHit[]>`select id, received_at from emails where ${beyond}
                             order by received_at <=| ${edge.received_at}::timestamptz fetch first ${rest} rows with ties`
          : tx<SearchHit[]>`select id, received_at from emails where ${beyond} order by received_at desc, id desc limit ${rest}`)
        return [...hits, ...older.sort(newestFirst).slice(0, rest)]
      }

      const want = page.limit + 1
      const [, top, below] = await Promise.all([timeout, collect(null, Math.max(SEARCH_COUNT_CAP, want)), page.after ? collect(page.after, want) : null])
      const ids = (below ?? top).slice(0, want).map(h => h.id)
      // the page's messages by their ids (the primary key): `offset 0` plans the lookup on its own, so
      // statistics that take the organization for empty cannot turn it into a walk of its mail
      const rows = await tx<SummaryRow[]>`
        select ${tx(SUMMARY_COLUMNS)} from (select ${tx(SUMMARY_COLUMNS)}, org_id from emails where id = any(${ids}::uuid[]) offset 0) e
         where org_id = ${orgId} order by received_at desc, id desc`
      return { rows, total: Math.min(top.length, SEARCH_COUNT_CAP) }
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
