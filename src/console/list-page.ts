/** The console's pages that are one list of the organization: a table of a page of it, and the pager to the next. */
import { page, type Row } from './call'
import { type Html, html, pager, table } from './layout'
import { render, type Visit } from './visit'

/** The table of a list page: its caption, the column heads, a row per item, and the sentence shown when there is none. */
export interface ListTable {
  caption: string
  heads: string[]
  row(item: Row): Html
  empty: string
}

/**
 * A page of the list operation `op`, newest first, at `path` (where the pager's links lead).
 * `args` are the list's filters besides the cursor; `before` stands above the table (a notice);
 * `url` is where the browser shows the page after a boosted form.
 */
export async function listPage(
  v: Visit,
  title: string,
  op: string,
  path: string,
  t: ListTable,
  opts: { args?: Record<string, unknown>; before?: Html | string; url?: string } = {},
) {
  const list = await page(v.ctx, v.auth, op, { ...opts.args, cursor: v.url.searchParams.get('cursor') ?? undefined })
  const body = html`${table(t.caption, t.heads, list.items, t.row, t.empty)}
${pager(path, list.total, list.cursor)}`
  return render(
    v,
    title,
    opts.before === undefined
      ? body
      : html`${opts.before}
${body}`,
    opts.url === undefined ? {} : { url: opts.url },
  )
}
