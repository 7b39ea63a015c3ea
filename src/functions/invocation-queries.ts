/**
 * The records of invocations (functions/ owns them): function_invocations, function_logs and
 * function_activity, their row types and every statement on them.
 */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import { listPage, listPagesOf, type PageRequest } from '../http/pagination'
import type { ActivityEntry } from './guest-fetch'
import type { LogLine, Outcome } from './sandbox/protocol'

export interface InvocationRow {
  id: string
  function_id: string
  deployment_id: string
  delivery_id: string | null
  email_id: string | null
  outcome: Outcome
  cpu_ms: number
  wall_ms: number
  request_method: string
  request_url: string
  response_status: number | null
  exception_name: string | null
  exception_message: string | null
  exception_stack: string | null
  logs_truncated: boolean
  subrequests: number
  created_at: Date
}

export interface LogRow {
  id: string
  invocation_id: string
  level: string
  message: string
  logged_at: Date
}

/** An email a function sent or replied to. */
export interface ActivityRow {
  id: string
  function_id: string
  type: 'email.sent' | 'email.replied'
  email_id: string
  delivery_id: string | null
  invocation_id: string | null
  created_at: Date
}

/** What an invocation records of itself (its logs and activity go in with it, apart). */
export type NewInvocation = Omit<InvocationRow, 'created_at'> & { org_id: string }

export async function insertInvocation(tx: Tx, i: NewInvocation): Promise<void> {
  await tx`
    insert into function_invocations (id, org_id, function_id, deployment_id, delivery_id, email_id, outcome, cpu_ms, wall_ms,
                                      request_method, request_url, response_status, exception_name, exception_message, exception_stack, logs_truncated, subrequests)
    values (${i.id}, ${i.org_id}, ${i.function_id}, ${i.deployment_id}, ${i.delivery_id}, ${i.email_id},
            ${i.outcome}, ${i.cpu_ms}, ${i.wall_ms}, ${i.request_method}, ${i.request_url}, ${i.response_status},
            ${i.exception_name}, ${i.exception_message}, ${i.exception_stack}, ${i.logs_truncated}, ${i.subrequests})`
}

/** An invocation's log lines, in one statement. */
export async function insertLogs(tx: Tx, orgId: string, functionId: string, invocationId: string, logs: LogLine[]): Promise<void> {
  const ids = logs.map(() => randomUUIDv7())
  await tx`
    insert into function_logs (id, org_id, function_id, invocation_id, level, message, logged_at)
    select l.id, ${orgId}, ${functionId}, ${invocationId}, l.level, l.message, l.logged_at
      from unnest(${ids}::uuid[], ${logs.map(l => l.level)}::text[], ${logs.map(l => l.message)}::text[], ${logs.map(l => l.at)}::timestamptz[])
        as l(id, level, message, logged_at)`
}

/** One email an invocation sent or replied to. */
export async function insertActivity(
  tx: Tx,
  i: { orgId: string; functionId: string; invocationId: string; deliveryId: string | null },
  a: ActivityEntry,
): Promise<void> {
  await tx`
    insert into function_activity (id, org_id, function_id, invocation_id, delivery_id, type, email_id, created_at)
    values (${randomUUIDv7()}, ${i.orgId}, ${i.functionId}, ${i.invocationId}, ${i.deliveryId}, ${a.type}, ${a.email_id}, ${a.at})`
}

/** A page of a function's invocations, newest first, of one outcome and since a time when given. */
export function invocationsPage(sql: Sql, orgId: string, functionId: string, page: PageRequest, f: { outcome?: Outcome; since?: Date }) {
  return listPage<InvocationRow>(sql, {
    columns: sql`*`,
    from: sql`function_invocations`,
    where: sql`org_id = ${orgId} and function_id = ${functionId}
      ${f.outcome ? sql`and outcome = ${f.outcome}` : sql``} ${f.since ? sql`and created_at >= ${f.since}` : sql``}`,
    page,
  })
}

/** A page of the invocations (newest first) of each of several functions, in two statements. */
export function invocationPages(sql: Sql, orgId: string, functionIds: string[], page: PageRequest) {
  return listPagesOf<InvocationRow>(sql, {
    columns: sql`*`,
    from: sql`function_invocations`,
    where: sql`org_id = ${orgId}`,
    parentColumn: 'function_id',
    parents: functionIds,
    page,
  })
}

export async function invocationById(sql: Sql, orgId: string, functionId: string, id: string): Promise<InvocationRow | undefined> {
  const [row] = await sql<InvocationRow[]>`select * from function_invocations where id = ${id} and function_id = ${functionId} and org_id = ${orgId}`
  return row
}

/** The invocations of a function on one email, in order. */
export function invocationsOfEmail(sql: Sql, emailId: string, functionId: string): Promise<InvocationRow[]> {
  return sql<InvocationRow[]>`select * from function_invocations where email_id = ${emailId} and function_id = ${functionId} order by id`
}

/** An invocation's log lines, in order. */
export function logsOfInvocation(sql: Sql, invocationId: string): Promise<LogRow[]> {
  return sql<LogRow[]>`select id, invocation_id, level, message, logged_at from function_logs where invocation_id = ${invocationId} order by id`
}

/** A page of a function's log lines, newest first. */
export function logsPage(sql: Sql, orgId: string, functionId: string, page: PageRequest) {
  return listPage<LogRow>(sql, {
    columns: sql`id, invocation_id, level, message, logged_at`,
    from: sql`function_logs`,
    where: sql`org_id = ${orgId} and function_id = ${functionId}`,
    page,
  })
}

/** A page of a function's activity, newest first, filtered by type, email and delivery when given. */
export function activityPage(sql: Sql, orgId: string, functionId: string, page: PageRequest, f: { type?: string; emailId?: string; deliveryId?: string }) {
  return listPage<ActivityRow>(sql, {
    columns: sql`id, function_id, type, email_id, delivery_id, invocation_id, created_at`,
    from: sql`function_activity`,
    where: sql`org_id = ${orgId} and function_id = ${functionId}
      ${f.type ? sql`and type = ${f.type}` : sql``} ${f.emailId ? sql`and email_id = ${f.emailId}` : sql``}
      ${f.deliveryId ? sql`and delivery_id = ${f.deliveryId}` : sql``}`,
    page,
  })
}

/** An invocation's activity, in order. */
export function activityOfInvocation(sql: Sql, invocationId: string): Promise<ActivityRow[]> {
  return sql<ActivityRow[]>`select * from function_activity where invocation_id = ${invocationId} order by id`
}

/** Invocations and time used since `from`, by outcome, for one function (or all when null). */
export function invocationTotals(sql: Sql, orgId: string, functionId: string | null, from: Date) {
  return sql<{ outcome: Outcome; n: number; cpu: number; wall: number }[]>`
    select outcome, count(*)::int as n, coalesce(sum(cpu_ms), 0)::float8 as cpu, coalesce(sum(wall_ms), 0)::float8 as wall
      from function_invocations
     where org_id = ${orgId} and created_at >= ${from} ${functionId ? sql`and function_id = ${functionId}` : sql``}
     group by outcome`
}

/** The number of log lines since `from`, of one function (or all when null). */
export async function logLineCount(sql: Sql, orgId: string, functionId: string | null, from: Date): Promise<number> {
  const [logs] = await sql<{ n: number }[]>`
    select count(*)::int as n from function_logs l
     where l.org_id = ${orgId} and l.logged_at >= ${from} ${functionId ? sql`and l.function_id = ${functionId}` : sql``}`
  return logs!.n
}

/** Invocations per bucket (hour or day) from `from` to now, empty buckets included, of one function (or all when undefined). */
export function invocationBuckets(sql: Sql, orgId: string, functionId: string | undefined, bucket: 'hour' | 'day', from: Date) {
  return sql<{ start: Date; invocations: number; ok: number; failed: number; cpu_ms: number }[]>`
    with buckets as (
      select generate_series(date_trunc(${bucket}, ${from}::timestamptz), date_trunc(${bucket}, now()), ${`1 ${bucket}`}::interval) as start)
    select b.start, count(i.id)::int as invocations, count(i.id) filter (where i.outcome = 'ok')::int as ok,
           count(i.id) filter (where i.outcome <> 'ok')::int as failed, coalesce(sum(i.cpu_ms), 0)::float8 as cpu_ms
      from buckets b
      left join function_invocations i on i.org_id = ${orgId} and date_trunc(${bucket}, i.created_at) = b.start and i.created_at >= ${from}
           ${functionId ? sql`and i.function_id = ${functionId}` : sql``}
     group by b.start order by b.start`
}
