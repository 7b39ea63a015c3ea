/**
 * The statements of a cursor-paged list, for any table: a page newest first and its total, or the
 * pages of many parents at once. Each feature names its own table in the fragments it passes;
 * the cursors themselves are in ./pagination.ts.
 */
import type postgres from 'postgres'
import type { Tx } from '../db/client'

/** A page asked for: its size, and the cursor's id (rows must have an id below it; null = the first page). */
export interface PageRequest {
  limit: number
  after: string | null
}

/**
 * The most rows a `capped` total counts: past it, `meta.total` says COUNT_CAP, "at least this
 * many". Counting a million messages for every page of 50 cost more than the page (issue 19).
 */
export const COUNT_CAP = 10_000

/** One page of an organization's list, as `listPage` reads it: `select <columns> from <from> <join> where <where>`. */
export interface ListQuery {
  /** the select list: sql`*`, or sql([...names]) for named columns */
  // biome-ignore lint/suspicious/noExplicitAny: postgres.js helpers of any column list
  columns: postgres.Fragment | postgres.Helper<any>
  /** the table the rows and the total come from, with its alias when the filter or columns use one */
  from: postgres.Fragment
  /** joins that only add columns to each row; the total is counted without them */
  join?: postgres.Fragment
  /** the filter of the list (at least the organization); `total` counts every row it matches */
  where: postgres.Fragment
  page: PageRequest
  /** the key the list is ordered by and the cursor compared with; qualify it (`d.id`) when a join makes `id` ambiguous */
  idColumn?: string
  /**
   * How `total` is found: `exact` counts every matching row (the default: lists of things an
   * organization creates by hand); `capped` counts up to COUNT_CAP (lists that grow with the
   * mail); or a scalar query reading a counter kept with the rows (`orgs.emails_count`).
   */
  total?: 'exact' | 'capped' | postgres.Fragment
}

/**
 * Reads a page newest first: the rows below the cursor, `limit + 1` of them so `Cursors.page` can
 * tell whether there is more, and the total of the whole filtered list, regardless of the cursor
 * (counted by a second statement, unless the first page holds the whole list).
 * Takes a transaction handle too, so both statements can run under its settings.
 */
export async function listPage<T extends object>(sql: Tx, q: ListQuery): Promise<{ rows: T[]; total: number }> {
  const id = sql(q.idColumn ?? 'id')
  const total = q.total ?? 'exact'
  const counted =
    total === 'exact'
      ? sql`select count(*)::int as total from ${q.from} where ${q.where}`
      : total === 'capped'
        ? sql`select count(*)::int as total from (select from ${q.from} where ${q.where} limit ${COUNT_CAP}) capped`
        : sql`select coalesce((${total}), 0)::int as total`
  // one after the other: on the pool, two at once would hold two connections for one page
  const rows = await sql<T[]>`
    select ${q.columns} from ${q.from} ${q.join ?? sql``}
     where ${q.where} ${q.page.after ? sql`and ${id} < ${q.page.after}` : sql``}
     order by ${id} desc limit ${q.page.limit + 1}`
  // A first page that holds every match is its own count (a long-poll's read, a small list): the
  // count statement is not sent (postgres.js runs a query only once it is awaited).
  if (q.page.after === null && rows.length <= q.page.limit && (total === 'exact' || total === 'capped')) return { rows, total: rows.length }
  const [count] = (await counted) as unknown as { total: number }[]
  return { rows, total: count!.total }
}

/** Pages of one child list for many parents at once, as a GraphQL field under a list reads them. */
export interface ChildListQuery extends ListQuery {
  /** the column naming a row's parent (uuid), qualified when a join makes it ambiguous */
  parentColumn: string
  parents: string[]
}

/**
 * `listPage` for many parents in two statements whatever their number: each parent's first
 * `limit + 1` rows below the cursor (a lateral join), and the totals of all of them (grouped).
 * Parents without rows get an empty page.
 */
export async function listPagesOf<T extends object>(sql: Tx, q: ChildListQuery): Promise<Map<string, { rows: T[]; total: number }>> {
  const id = sql(q.idColumn ?? 'id')
  const parent = sql(q.parentColumn)
  const found = await sql<(T & { parent_key__: string })[]>`
    select k.parent_key__, x.* from unnest(${q.parents}::uuid[]) as k(parent_key__)
     cross join lateral (
       select ${q.columns} from ${q.from} ${q.join ?? sql``}
        where ${q.where} and ${parent} = k.parent_key__ ${q.page.after ? sql`and ${id} < ${q.page.after}` : sql``}
        order by ${id} desc limit ${q.page.limit + 1}) x`
  const counts = await sql<{ parent_key__: string; total: number }[]>`
    select ${parent} as parent_key__, count(*)::int as total from ${q.from}
     where ${q.where} and ${parent} = any(${q.parents}::uuid[]) group by 1`
  const pages = new Map(q.parents.map(p => [p, { rows: [] as T[], total: 0 }]))
  for (const { parent_key__: key, ...row } of found) pages.get(key)?.rows.push(row as unknown as T)
  for (const c of counts) pages.get(c.parent_key__)!.total = c.total
  return pages
}
