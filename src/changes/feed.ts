/**
 * Reading the changes feed. A page is read in one statement, so the changes and the
 * organization's committed head come from one snapshot: when nothing (more) matches the
 * filters, the cursor moves to the head, and every change up to it has committed (the counter
 * row serializes commits in seq order, see record.ts), so filters never leave a gap.
 */
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { cursors } from '../http/pagination'
import { iso } from '../http/timestamps'
import { type ChangeRow, counterOf, type FeedFilter, feedPageRow, pruneChangesOlderThan } from './queries'

/** Changes are kept this long; older ones are pruned by the cleanup job. */
export const CHANGES_RETENTION_DAYS = 7
export const EARLIEST = 'earliest'

export const presentChange = (r: ChangeRow) => ({
  id: r.id,
  seq: Number(r.seq),
  type: r.type,
  occurred_at: iso(r.occurred_at)!,
  resource: { type: r.resource_type, id: r.resource_id },
  data: r.data,
})

/** Parses `types=a.b,c.*`. */
export function parseTypes(value: string | undefined): Pick<FeedFilter, 'types' | 'prefixes'> {
  const out = { types: [] as string[], prefixes: [] as string[] }
  if (value === undefined) return out
  for (const raw of value.split(',')) {
    const t = raw.trim()
    if (!/^[a-z0-9_]+(\.[a-z0-9_]+)*(\.\*)?$/.test(t))
      throw errors.validation('types', `"${raw}" is not a change type (such as email.received) or a prefix (such as email.*)`)
    if (t.endsWith('.*')) out.prefixes.push(t.slice(0, -1))
    else out.types.push(t)
  }
  return out
}

const cursorScope = (orgId: string) => `changes:${orgId}`

export function encodeCursor(ctx: AppContext, orgId: string, seq: number): string {
  return cursors(ctx).encode(cursorScope(orgId), String(seq))
}

/** The seq after which to read: `earliest` (null), or a cursor of this organization's feed. */
export function decodeCursor(ctx: AppContext, orgId: string, cursor: string): number | null {
  if (cursor === EARLIEST) return null
  const value = cursors(ctx).decodeValue(cursorScope(orgId), cursor)
  if (!value || !/^\d{1,18}$/.test(value)) throw errors.validation('cursor', 'is not a cursor returned by this feed')
  return Number(value)
}

/** The organization's committed head and retention floor. */
export async function feedBounds(sql: Tx, orgId: string): Promise<{ head: number; pruned: number }> {
  const row = await counterOf(sql, orgId)
  return { head: Number(row.head), pruned: Number(row.pruned) }
}

export interface FeedPage {
  changes: ChangeRow[]
  /** the seq to resume after */
  next: number
  /** matching changes after `after` at read time, this page included */
  total: number
}

/**
 * Reads up to `limit` matching changes after seq `after`; 410 when `after` is older than retention.
 * `counted: false` skips `total` (0), which an event stream does not send: a stream catching up
 * would otherwise count what is left at every page.
 */
export async function readFeed(ctx: AppContext, orgId: string, after: number | null, limit: number, f: FeedFilter, counted = true): Promise<FeedPage> {
  const row = await feedPageRow(ctx.sql, orgId, after, limit, f, counted)
  const head = Number(row.head)
  const pruned = Number(row.pruned)
  if (after !== null && after < pruned) {
    const earliest = encodeCursor(ctx, orgId, pruned)
    throw new ApiError(
      'cursor_expired',
      `cursor: older than the feed's retention of ${CHANGES_RETENTION_DAYS} days; resume from the earliest cursor ${earliest} (or cursor=earliest)`,
      { earliest_cursor: earliest },
    )
  }
  const rows = (row.rows ?? []).map(r => ({ ...r, occurred_at: new Date(r.occurred_at) }))
  const more = rows.length > limit
  const changes = rows.slice(0, limit)
  // Past the last match when there are more; otherwise everything up to the head was seen.
  const next = more ? Number(changes.at(-1)!.seq) : Math.max(head, after ?? pruned)
  return { changes, next, total: row.total }
}

/**
 * Deletes changes older than retention, recording per organization the highest seq pruned:
 * resuming below it is 410. A seq is pruned only with every lower one.
 */
export const pruneChanges = (sql: Tx, retentionSeconds = CHANGES_RETENTION_DAYS * 86400): Promise<number> => pruneChangesOlderThan(sql, retentionSeconds)
