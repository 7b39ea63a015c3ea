/**
 * The send_counts table: each organization's sends by minute and by hour, which the send limits
 * count (src/sending/service.ts). Its statements live here, and nowhere else.
 */
import type postgres from 'postgres'
import type { Sql, Tx } from '../db/client'

/**
 * The send limits, enforced where the sends are written. `lockSendCounts` takes the rows of the
 * current minute and hour of each organization (created at 0 when missing) and holds them to the
 * commit; `readSendCounts`, sent behind it in the same round trip, then sees every send committed
 * before the lock was taken. So the transactions writing an organization's sends take turns,
 * each knows exactly what the others counted, and no two can together pass a limit. Then
 * `countSends` adds the sends written. The hour's window is the minute rows started within the
 * last hour, the day's the hour rows started within the last day: each misses less than a minute
 * (an hour) of its oldest sends.
 */
export function lockSendCounts(tx: Tx, orgIds: string[]) {
  return tx`
    insert into send_counts as c (org_id, span, start, sends)
    select o.org_id, s.span, date_trunc(s.span, now()), 0
      from (select distinct unnest(${orgIds}::uuid[]) as org_id) as o, (values ('minute'), ('hour')) as s(span)
     order by 1, 2
    on conflict (org_id, span, start) do update set sends = c.sends`.execute()
}

/** The `hour` and `day` columns of the sends counted for the organization `org` (a column of the statement). */
export const countedSends = (tx: Tx, org: postgres.Fragment) => tx`
  (select coalesce(sum(sends), 0)::int from send_counts where org_id = ${org} and span = 'minute' and start > now() - interval '1 hour') as hour,
  (select coalesce(sum(sends), 0)::int from send_counts where org_id = ${org} and span = 'hour' and start > now() - interval '1 day') as day`

/** What `readSendCounts` reads of an organization: its sends in the last hour and day. */
export interface CountedSends {
  org_id: string
  hour: number
  day: number
}

export function readSendCounts(tx: Tx, orgIds: string[]) {
  return tx<CountedSends[]>`
    select o.org_id, ${countedSends(tx, tx`o.org_id`)}
      from (select distinct unnest(${orgIds}::uuid[]) as org_id) as o`.execute()
}

/** Adds the sends written to the current minute's and hour's rows of their organizations (locked by `lockSendCounts`). */
export function countSends(tx: Tx, orgIds: string[]) {
  return tx`
    update send_counts as c set sends = c.sends + n.sends
      from (select org_id, count(*)::int as sends from unnest(${orgIds}::uuid[]) as o(org_id) group by 1) as n, (values ('minute'), ('hour')) as s(span)
     where c.org_id = n.org_id and c.span = s.span and c.start = date_trunc(s.span, now())`.execute()
}

/** The cleanup job's part: rows older than any window counts (the day's is the last 24 hour rows). */
export async function pruneSendCounts(sql: Sql): Promise<number> {
  return (await sql`delete from send_counts where start < now() - interval '2 days'`).count
}
