/**
 * The changes and change_counters tables (changes/ owns them): their row types and every
 * statement on them. Why the counter row is bumped by the statement that inserts the changes,
 * and taken last: record.ts; why a page is read in one statement: feed.ts.
 */
import type { Tx } from '../db/client'
import { CHANGES_CHANNEL, MAX_SIGNAL_BYTES } from '../events'

/** A change as the feed reads it. */
export interface ChangeRow {
  id: string
  seq: string | number
  type: string
  resource_type: string
  resource_id: string
  data: Record<string, unknown>
  occurred_at: Date
}

/** A change to insert, at its place `ord` in the caller's list. */
export interface NewChange {
  ord: number
  org_id: string
  id: string
  type: string
  resource_type: string
  resource_id: string
  addresses: string[]
  data: Record<string, unknown>
}

/**
 * Inserts the changes, numbered from their organizations' counters, and notifies each
 * organization with the addresses they are about; the seq of each, in `ord` order.
 */
export function insertChanges(tx: Tx, rows: NewChange[]) {
  // Counter rows are locked in org id order, so two transactions writing changes of the same
  // organizations never wait on each other in a cycle.
  return tx<{ ord: number; seq: string }[]>`
    with input as (
      select x.*, row_number() over (partition by x.org_id order by x.ord) as n, count(*) over (partition by x.org_id) as total
        from jsonb_to_recordset(${tx.json(rows as never)}::jsonb)
          as x(ord int, org_id uuid, id text, type text, resource_type text, resource_id text, addresses text[], data jsonb)),
    bumped as (
      insert into change_counters as c (org_id, last_seq)
      select org_id, count(*) from input group by org_id order by org_id
      on conflict (org_id) do update set last_seq = c.last_seq + excluded.last_seq
      returning org_id, last_seq),
    numbered as (
      select i.*, b.last_seq - i.total + i.n as seq from input i join bumped b using (org_id)),
    written as (
      insert into changes (org_id, seq, id, type, resource_type, resource_id, addresses, data)
      select org_id, seq, id, type, resource_type, resource_id, addresses, data from numbered),
    signals as (
      select org_id, concat_ws(' ', org_id::text, string_agg(distinct a, ' ')) as payload
        from input left join lateral unnest(addresses) a on true group by org_id)
    select ord, seq,
           (select count(pg_notify(${CHANGES_CHANNEL}, case when length(payload) > ${MAX_SIGNAL_BYTES} or payload ~ '[^!-~ ]' then org_id::text else payload end))
              from signals) as notified
      from numbered order by ord`
}

/** The organization's committed head and retention floor, as bigint text (`0` before its first change). */
export async function counterOf(sql: Tx, orgId: string): Promise<{ head: string; pruned: string }> {
  const [row] = await sql<{ head: string; pruned: string }[]>`
    select coalesce(max(last_seq), 0) as head, coalesce(max(pruned_through), 0) as pruned from change_counters where org_id = ${orgId}`
  return row!
}

export interface FeedFilter {
  /** exact types, and prefixes from entries ending in `.*` */
  types: string[]
  prefixes: string[]
  /** only changes about this mailbox address (connection keys: always their own) */
  address: string | null
}

/** A page of the feed as its statement reads it: the bounds, the rows (JSON: `occurred_at` is text) and the count. */
export interface FeedPageRow {
  head: string
  pruned: string
  rows: ChangeRow[] | null
  total: number
}

/**
 * Up to `limit + 1` changes matching `f` after seq `after` (the retention floor when null), with
 * the organization's bounds and, when `counted`, how many match (else 0), from one snapshot.
 */
export async function feedPageRow(sql: Tx, orgId: string, after: number | null, limit: number, f: FeedFilter, counted: boolean): Promise<FeedPageRow> {
  const match = sql`
    ${f.types.length || f.prefixes.length ? sql`and (type = any(${f.types}) or type like any(${f.prefixes.map(p => p.replace(/[\\%_]/g, c => `\\${c}`) + '%')}))` : sql``}
    ${f.address ? sql`and addresses @> array[${f.address}]::text[]` : sql``}`
  const [row] = await sql<FeedPageRow[]>`
    with bounds as (
      select coalesce(max(last_seq), 0) as head, coalesce(max(pruned_through), 0) as pruned from change_counters where org_id = ${orgId}),
    start as (select coalesce(${after}::bigint, (select pruned from bounds)) as after)
    select (select head from bounds) as head, (select pruned from bounds) as pruned,
           (select json_agg(c order by c.seq) from (
              select id, seq, type, resource_type, resource_id, data, occurred_at from changes
               where org_id = ${orgId} and seq > (select after from start) ${match}
               order by seq limit ${limit + 1}) c) as rows,
           ${counted ? sql`(select count(*)::int from changes where org_id = ${orgId} and seq > (select after from start) ${match})` : sql`0`} as total`
  return row!
}

/**
 * Deletes changes older than `retentionSeconds`, recording per organization the highest seq
 * pruned; how many were deleted. A seq is pruned only with every lower one.
 */
export async function pruneChangesOlderThan(sql: Tx, retentionSeconds: number): Promise<number> {
  const [row] = await sql<{ deleted: number }[]>`
    with cut as (
      select org_id, max(seq) as upto from changes
       where occurred_at < now() - make_interval(secs => ${retentionSeconds}) group by org_id),
    gone as (delete from changes c using cut where c.org_id = cut.org_id and c.seq <= cut.upto returning 1),
    moved as (update change_counters k set pruned_through = cut.upto from cut where k.org_id = cut.org_id and k.pruned_through < cut.upto)
    select count(*)::int as deleted from gone`
  return row!.deleted
}
