/**
 * Wake schedules: create (or update by dedupe_key), read, change, delete, run now, and the
 * scheduler that turns due slots into runs. A run is a row and a `wake.run` job written in one
 * transaction; the job delivers it (run.job.ts) with the run's id, stable across retries.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import { listPage, type PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { enqueue } from '../jobs/queue'
import { planDefinition, type Plan } from '../account/plans'
import { nextSlot, parseSchedule, type Schedule } from './schedule'
import { WAKE_LATE_AFTER_SECONDS, WAKE_RUN_ATTEMPTS } from './model'
import { liveConnectionExists } from '../connections/queries'
import { functionExists } from '../functions/queries'
import { liveEndpointExists } from '../webhooks/queries'

export const WAKE_RUN_KIND = 'wake.run'

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

export const presentWake = (w: WakeRow) => ({
  id: w.id,
  target: { type: w.target_type, id: w.target_id },
  schedule: { type: w.schedule_type, at: iso(w.run_at), cron: w.cron, time_zone: w.time_zone, every_minutes: w.every_minutes },
  command: { name: w.command.name, payload: w.command.payload ?? null },
  dedupe_key: w.dedupe_key,
  enabled: w.enabled,
  next_run_at: iso(w.next_run_at),
  last_run_at: iso(w.last_run_at),
  created_at: iso(w.created_at)!,
  updated_at: iso(w.updated_at)!,
})

export const presentRun = (r: RunRow) => ({
  run_id: r.id,
  wake_id: r.wake_id,
  scheduled_for: iso(r.scheduled_for)!,
  late: r.late,
  manual: r.manual,
  status: r.status,
  attempts: r.attempts,
  response_status: r.response_status,
  last_error: r.last_error,
  created_at: iso(r.created_at)!,
  finished_at: iso(r.finished_at),
})

type Target = { type: WakeRow['target_type']; id: string }

/** 404 unless the target exists in the organization (and can receive a run). */
async function checkTarget(tx: Tx, orgId: string, target: Target) {
  const id = target.id.toLowerCase()
  const exists =
    target.type === 'endpoint'
      ? await liveEndpointExists(tx, orgId, id)
      : target.type === 'agent_connection'
        ? await liveConnectionExists(tx, orgId, id)
        : await functionExists(tx, orgId, id)
  if (!exists) throw errors.notFound(`target.id: ${target.type}`)
}

function checkCommand(command: { payload?: unknown }) {
  if (Buffer.byteLength(JSON.stringify(command.payload ?? null)) > 64 * 1024) throw errors.validation('command.payload', 'must be at most 64 KB as JSON')
}

/** Refuses enabling past the plan's cap of enabled wakes; run under the organization's wake lock. */
async function checkActiveCap(tx: Tx, orgId: string, except: string | null) {
  const [row] = await tx<{ plan: Plan; active: number }[]>`
    select o.plan, (select count(*)::int from wakes where org_id = o.id and enabled and next_run_at is not null and id is distinct from ${except}) as active
      from orgs o where o.id = ${orgId}`
  const max = planDefinition(row!.plan).limits.wakes_active_max
  if (row!.active >= max) throw new ApiError('quota_exceeded', `wake: the ${row!.plan} plan allows ${max} enabled wakes`, { limit: 'wakes_active_max', max })
}

/** Serializes an organization's wake writes, so the cap and dedupe keys hold under concurrency. */
const lockWakes = (tx: Tx, orgId: string) => tx`select pg_advisory_xact_lock(hashtextextended(${`wakes:${orgId}`}, 0))`

export interface WakeInput {
  target: Target
  schedule: { at?: string; cron?: string; time_zone?: string; every_minutes?: number }
  command: { name: string; payload?: unknown }
  dedupe_key?: string
  enabled?: boolean
}

/** Creates a wake, or updates the one with the same dedupe_key. */
export async function createWake(sql: Sql, orgId: string, input: WakeInput, now = new Date()): Promise<{ row: WakeRow; created: boolean }> {
  const schedule = parseSchedule(input.schedule, now)
  checkCommand(input.command)
  const enabled = input.enabled ?? true
  return sql.begin(async tx => {
    await lockWakes(tx, orgId)
    await checkTarget(tx, orgId, input.target)
    const [existing] = input.dedupe_key ? await tx<WakeRow[]>`select * from wakes where org_id = ${orgId} and dedupe_key = ${input.dedupe_key}` : []
    if (enabled) await checkActiveCap(tx, orgId, existing?.id ?? null)
    const next = nextSlot(schedule, now)
    const fields = {
      target_type: input.target.type,
      target_id: input.target.id.toLowerCase(),
      ...schedule,
      command: tx.json(input.command as never),
      enabled,
      next_run_at: next,
      updated_at: now,
    }
    if (existing) {
      const [row] = await tx<WakeRow[]>`update wakes set ${tx(fields as never)} where id = ${existing.id} returning *`
      return { row: row!, created: false }
    }
    const [row] = await tx<WakeRow[]>`
      insert into wakes ${tx({ id: randomUUIDv7(), org_id: orgId, dedupe_key: input.dedupe_key ?? null, created_at: now, ...fields } as never)} returning *`
    return { row: row!, created: true }
  })
}

export async function getWake(sql: Tx, orgId: string, id: string): Promise<WakeRow> {
  const [row] = await sql<WakeRow[]>`select * from wakes where org_id = ${orgId} and id = ${id}`
  if (!row) throw errors.notFound('wake')
  return row
}

export function listWakes(sql: Sql, orgId: string, page: PageRequest, f: { enabled?: boolean; target_type?: string; target_id?: string }) {
  return listPage<WakeRow>(sql, {
    columns: sql`*`,
    from: sql`wakes`,
    where: sql`org_id = ${orgId} ${f.enabled !== undefined ? sql`and enabled = ${f.enabled}` : sql``}
      ${f.target_type ? sql`and target_type = ${f.target_type}` : sql``} ${f.target_id ? sql`and target_id = ${f.target_id}` : sql``}`,
    page,
  })
}

export async function updateWake(sql: Sql, orgId: string, id: string, patch: Partial<Omit<WakeInput, 'dedupe_key'>>, now = new Date()): Promise<WakeRow> {
  const schedule = patch.schedule ? parseSchedule(patch.schedule, now) : null
  if (patch.command) checkCommand(patch.command)
  return sql.begin(async tx => {
    await lockWakes(tx, orgId)
    const current = await getWake(tx, orgId, id)
    if (patch.target) await checkTarget(tx, orgId, patch.target)
    const enabled = patch.enabled ?? current.enabled
    const s: Schedule = schedule ?? current
    // a new schedule, or enabling again, starts from now; otherwise the slot stays
    const next = schedule || (enabled && !current.enabled) ? nextSlot(s, now) : current.next_run_at
    if (enabled && (!current.enabled || !current.next_run_at)) await checkActiveCap(tx, orgId, id)
    const [row] = await tx<WakeRow[]>`
      update wakes set ${tx({
        ...(patch.target && { target_type: patch.target.type, target_id: patch.target.id.toLowerCase() }),
        ...(schedule ?? {}),
        ...(patch.command && { command: tx.json(patch.command as never) }),
        enabled,
        next_run_at: next,
        updated_at: now,
      } as never)}
       where id = ${id} returning *`
    return row!
  })
}

export async function deleteWake(sql: Sql, orgId: string, id: string) {
  const rows = await sql`delete from wakes where org_id = ${orgId} and id = ${id} returning id`
  if (!rows.length) throw errors.notFound('wake')
  return { id, deleted: true as const }
}

/** A run's row and its delivery job, in the caller's transaction. */
async function startRun(tx: Tx, wake: Pick<WakeRow, 'id' | 'org_id'>, scheduledFor: Date, o: { late: boolean; manual: boolean }): Promise<RunRow | null> {
  const [run] = await tx<RunRow[]>`
    insert into wake_runs (id, org_id, wake_id, scheduled_for, late, manual)
    values (${randomUUIDv7()}, ${wake.org_id}, ${wake.id}, ${scheduledFor}, ${o.late}, ${o.manual})
    on conflict (wake_id, scheduled_for) where not manual do nothing
    returning *`
  if (run) await enqueue(tx, WAKE_RUN_KIND, { run_id: run.id }, { maxAttempts: WAKE_RUN_ATTEMPTS })
  return run ?? null
}

/** POST /v1/wake/{id}/run: a run now, whatever the schedule (disabled wakes included). */
export async function runWakeNow(sql: Sql, orgId: string, id: string, now = new Date()): Promise<RunRow> {
  return sql.begin(async tx => {
    const wake = await getWake(tx, orgId, id)
    return (await startRun(tx, wake, now, { late: false, manual: true }))!
  })
}

export function listRuns(sql: Sql, orgId: string, wakeId: string, page: PageRequest) {
  return listPage<RunRow>(sql, { columns: sql`*`, from: sql`wake_runs`, where: sql`org_id = ${orgId} and wake_id = ${wakeId}`, page })
}

/**
 * The scheduler: every enabled wake whose slot is due at `now` gets one run for it, and its
 * next slot after `now`. Slots missed while nothing ran (the service down) are not replayed one
 * by one: the wake fires once, marked late, and carries on from now. Wakes are taken with
 * `skip locked`, so schedulers in several processes share the work and never fire a slot twice
 * (the slot is also unique per wake).
 */
export async function scheduleDueWakes(ctx: AppContext, now = new Date(), limit = 200): Promise<number> {
  return ctx.sql.begin(async tx => {
    const due = await tx<WakeRow[]>`
      select * from wakes where enabled and next_run_at <= ${now} order by next_run_at limit ${limit} for update skip locked`
    for (const wake of due) {
      const slot = wake.next_run_at!
      const late = now.getTime() - slot.getTime() > WAKE_LATE_AFTER_SECONDS * 1000
      await startRun(tx, wake, slot, { late, manual: false })
      const next = wake.schedule_type === 'at' ? null : nextSlot(wake, now, slot)
      await tx`update wakes set next_run_at = ${next}, last_run_at = ${now} where id = ${wake.id}`
    }
    return due.length
  })
}
