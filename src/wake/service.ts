/**
 * Wake schedules: create (or update by dedupe_key), read, change, delete, run now, and the
 * scheduler that turns due slots into runs. A run is a row and a `wake.run` job written in one
 * transaction; the job delivers it (run.job.ts) with the run's id, stable across retries.
 */
import type { AppContext } from '../context'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { enqueue } from '../jobs/queue'
import { planDefinition } from '../account/plans'
import { nextSlot, parseSchedule, type Schedule } from './schedule'
import { WAKE_LATE_AFTER_SECONDS, WAKE_RUN_ATTEMPTS } from './model'
import { liveConnectionExists } from '../connections/queries'
import { functionExists } from '../functions/queries'
import { liveEndpointExists } from '../webhooks/queries'
import {
  advanceWake,
  deleteWakeRow,
  dueWakes,
  enabledWakes,
  insertRun,
  insertWake,
  lockWakes,
  type RunRow,
  runsPage,
  updateWakeRow,
  type WakeRow,
  wakeByDedupeKey,
  wakeById,
  wakesPage,
} from './queries'

export const WAKE_RUN_KIND = 'wake.run'

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
  const row = await enabledWakes(tx, orgId, except)
  const max = planDefinition(row.plan).limits.wakes_active_max
  if (row.active >= max) throw new ApiError('quota_exceeded', `wake: the ${row.plan} plan allows ${max} enabled wakes`, { limit: 'wakes_active_max', max })
}

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
    const existing = input.dedupe_key ? await wakeByDedupeKey(tx, orgId, input.dedupe_key) : undefined
    if (enabled) await checkActiveCap(tx, orgId, existing?.id ?? null)
    const next = nextSlot(schedule, now)
    const fields = {
      target_type: input.target.type,
      target_id: input.target.id.toLowerCase(),
      ...schedule,
      command: input.command,
      enabled,
      next_run_at: next,
      updated_at: now,
    }
    if (existing) return { row: await updateWakeRow(tx, existing.id, fields), created: false }
    const row = await insertWake(tx, { org_id: orgId, dedupe_key: input.dedupe_key ?? null, created_at: now, ...fields })
    return { row, created: true }
  })
}

export async function getWake(sql: Tx, orgId: string, id: string): Promise<WakeRow> {
  const row = await wakeById(sql, orgId, id)
  if (!row) throw errors.notFound('wake')
  return row
}

export function listWakes(sql: Sql, orgId: string, page: PageRequest, f: { enabled?: boolean; target_type?: string; target_id?: string }) {
  return wakesPage(sql, orgId, page, f)
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
    return updateWakeRow(tx, id, {
      ...(patch.target && { target_type: patch.target.type, target_id: patch.target.id.toLowerCase() }),
      ...(schedule ?? {}),
      ...(patch.command && { command: patch.command }),
      enabled,
      next_run_at: next,
      updated_at: now,
    })
  })
}

export async function deleteWake(sql: Sql, orgId: string, id: string) {
  if (!(await deleteWakeRow(sql, orgId, id))) throw errors.notFound('wake')
  return { id, deleted: true as const }
}

/** A run's row and its delivery job, in the caller's transaction. */
async function startRun(tx: Tx, wake: Pick<WakeRow, 'id' | 'org_id'>, scheduledFor: Date, o: { late: boolean; manual: boolean }): Promise<RunRow | null> {
  const run = await insertRun(tx, wake, scheduledFor, o)
  if (run) await enqueue(tx, WAKE_RUN_KIND, { run_id: run.id }, { maxAttempts: WAKE_RUN_ATTEMPTS })
  return run
}

/** POST /v1/wake/{id}/run: a run now, whatever the schedule (disabled wakes included). */
export async function runWakeNow(sql: Sql, orgId: string, id: string, now = new Date()): Promise<RunRow> {
  return sql.begin(async tx => {
    const wake = await getWake(tx, orgId, id)
    return (await startRun(tx, wake, now, { late: false, manual: true }))!
  })
}

export function listRuns(sql: Sql, orgId: string, wakeId: string, page: PageRequest) {
  return runsPage(sql, orgId, wakeId, page)
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
    const due = await dueWakes(tx, now, limit)
    for (const wake of due) {
      const slot = wake.next_run_at!
      const late = now.getTime() - slot.getTime() > WAKE_LATE_AFTER_SECONDS * 1000
      await startRun(tx, wake, slot, { late, manual: false })
      const next = wake.schedule_type === 'at' ? null : nextSlot(wake, now, slot)
      await advanceWake(tx, wake.id, next, now)
    }
    return due.length
  })
}
