/**
 * The wakes and wake_runs tables (wake/ owns them): the row types and every statement. The
 * service (./service.ts) and the run job (./run.job.ts) keep the rules: caps, slots, delivery.
 */
import { randomUUIDv7 } from 'bun'
import { orgsAs } from '../account/org-queries'
import type { Plan } from '../account/plans'
import type { Sql, Tx } from '../db/client'
import { listPage, type PageRequest } from '../http/pagination'
import { liveConnections } from '../connections/queries'
import { liveEndpoints } from '../webhooks/queries'
import type { Schedule } from './schedule'

export interface WakeRow extends Schedule {
  id: string
  org_id: string
  target_type: 'function' | 'endpoint' | 'agent_connection'
  target_id: string
  command: { name: string; payload?: unknown }
  dedupe_key: string | null
  enabled: boolean
  next_run_at: Date | null
  last_run_at: Date | null
  created_at: Date
  updated_at: Date
}

export interface RunRow {
  id: string
  org_id: string
  wake_id: string
  scheduled_for: Date
  late: boolean
  manual: boolean
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  response_status: number | null
  last_error: string | null
  created_at: Date
  finished_at: Date | null
}

/** Columns of a wake to write (`command` as given: stored as JSON). */
type WakeFields = Record<string, unknown>

const asColumns = (tx: Tx, fields: WakeFields) => tx(('command' in fields ? { ...fields, command: tx.json(fields.command as never) } : fields) as never)

/** The organization's plan and how many of its wakes are enabled with a slot, `except` aside. */
export async function enabledWakes(tx: Tx, orgId: string, except: string | null): Promise<{ plan: Plan; active: number }> {
  const [row] = await tx<{ plan: Plan; active: number }[]>`
    select o.plan, (select count(*)::int from wakes where org_id = o.id and enabled and next_run_at is not null and id is distinct from ${except}) as active
      from ${orgsAs(tx, 'o')} where o.id = ${orgId}`
  return row!
}

/** Serializes an organization's wake writes, so the cap and dedupe keys hold under concurrency. */
export const lockWakes = (tx: Tx, orgId: string) => tx`select pg_advisory_xact_lock(hashtextextended(${`wakes:${orgId}`}, 0))`

export async function wakeByDedupeKey(tx: Tx, orgId: string, dedupeKey: string): Promise<WakeRow | undefined> {
  const [row] = await tx<WakeRow[]>`select * from wakes where org_id = ${orgId} and dedupe_key = ${dedupeKey}`
  return row
}

export async function wakeById(sql: Tx, orgId: string, id: string): Promise<WakeRow | undefined> {
  const [row] = await sql<WakeRow[]>`select * from wakes where org_id = ${orgId} and id = ${id}`
  return row
}

/** Inserts a wake; `fields` holds its columns but id. */
export async function insertWake(tx: Tx, fields: WakeFields): Promise<WakeRow> {
  const [row] = await tx<WakeRow[]>`insert into wakes ${asColumns(tx, { id: randomUUIDv7(), ...fields })} returning *`
  return row!
}

/** Sets the given columns of a wake. */
export async function updateWakeRow(tx: Tx, id: string, fields: WakeFields): Promise<WakeRow> {
  const [row] = await tx<WakeRow[]>`update wakes set ${asColumns(tx, fields)} where id = ${id} returning *`
  return row!
}

export function wakesPage(sql: Sql, orgId: string, page: PageRequest, f: { enabled?: boolean; target_type?: string; target_id?: string }) {
  return listPage<WakeRow>(sql, {
    columns: sql`*`,
    from: sql`wakes`,
    where: sql`org_id = ${orgId} ${f.enabled !== undefined ? sql`and enabled = ${f.enabled}` : sql``}
      ${f.target_type ? sql`and target_type = ${f.target_type}` : sql``} ${f.target_id ? sql`and target_id = ${f.target_id}` : sql``}`,
    page,
  })
}

/** Deletes the organization's wake `id`; whether it had one. */
export async function deleteWakeRow(sql: Sql, orgId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from wakes where org_id = ${orgId} and id = ${id} returning id`
  return rows.length > 0
}

/** The enabled wakes due at `now`, locked (skip locked: schedulers in several processes share them). */
export function dueWakes(tx: Tx, now: Date, limit: number) {
  return tx<WakeRow[]>`
    select * from wakes where enabled and next_run_at <= ${now} order by next_run_at limit ${limit} for update skip locked`
}

/** Moves a wake on to its next slot (null: none), having run at `now`. */
export async function advanceWake(tx: Tx, id: string, next: Date | null, now: Date): Promise<void> {
  await tx`update wakes set next_run_at = ${next}, last_run_at = ${now} where id = ${id}`
}

/** A one-shot wake is done once its run got through. */
export async function disableWake(tx: Tx, id: string): Promise<void> {
  await tx`update wakes set enabled = false, updated_at = now() where id = ${id}`
}

/** A run of the wake for `scheduledFor`; null if a scheduled run of that slot exists already. */
export async function insertRun(
  tx: Tx,
  wake: Pick<WakeRow, 'id' | 'org_id'>,
  scheduledFor: Date,
  o: { late: boolean; manual: boolean },
): Promise<RunRow | null> {
  const [run] = await tx<RunRow[]>`
    insert into wake_runs (id, org_id, wake_id, scheduled_for, late, manual)
    values (${randomUUIDv7()}, ${wake.org_id}, ${wake.id}, ${scheduledFor}, ${o.late}, ${o.manual})
    on conflict (wake_id, scheduled_for) where not manual do nothing
    returning *`
  return run ?? null
}

export function runsPage(sql: Sql, orgId: string, wakeId: string, page: PageRequest) {
  return listPage<RunRow>(sql, { columns: sql`*`, from: sql`wake_runs`, where: sql`org_id = ${orgId} and wake_id = ${wakeId}`, page })
}

/** A run with its wake and where it goes: the live connection's address, the live endpoint's URL and kind. */
export type LoadedRun = RunRow & { wake: WakeRow; address: string | null; url: string | null; endpoint_kind: string | null; endpoint_function: string | null }

export async function loadRun(sql: Sql, runId: string): Promise<LoadedRun | null> {
  const [row] = await sql<LoadedRun[]>`
    select r.*, to_jsonb(w) as wake,
           (select address from ${liveConnections(sql)} c where c.id = w.target_id and w.target_type = 'agent_connection') as address,
           e.url, e.kind as endpoint_kind, e.function_id as endpoint_function
      from wake_runs r join wakes w on w.id = r.wake_id
      left join ${liveEndpoints(sql)} e on w.target_type = 'endpoint' and e.id = w.target_id
     where r.id = ${runId}`
  return row ?? null
}

export async function finishRun(tx: Tx, id: string, status: 'delivered' | 'failed', responseStatus: number | null, error: string | null): Promise<void> {
  await tx`
    update wake_runs set status = ${status}, response_status = ${responseStatus}, last_error = ${error}, finished_at = now()
     where id = ${id}`
}

export async function setRunAttempts(sql: Sql, id: string, attempts: number): Promise<void> {
  await sql`update wake_runs set attempts = ${attempts} where id = ${id}`
}

export async function setRunError(sql: Sql, id: string, error: string, responseStatus: number | null): Promise<void> {
  await sql`update wake_runs set last_error = ${error}, response_status = ${responseStatus} where id = ${id}`
}
