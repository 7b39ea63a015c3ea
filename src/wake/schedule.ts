/**
 * When a wake fires. Cron expressions and time zones are croner's (the `croner` package):
 * maintained, without dependencies, it evaluates a pattern in an IANA zone through the
 * platform's Intl data and handles daylight saving time the way cron users expect (a time
 * that does not exist on the spring-forward day fires at the first valid minute after it; a
 * time that occurs twice in autumn fires once). Nothing about calendars is written here.
 */
import { Cron } from 'croner'
import { errors } from '../errors'
import { parseTimestamp } from '../http/timestamps'
import { WAKE_MIN_INTERVAL_MINUTES } from '../account/plans'

export interface Schedule {
  schedule_type: 'at' | 'cron' | 'every'
  run_at: Date | null
  cron: string | null
  time_zone: string | null
  every_minutes: number | null
}

function cronOf(pattern: string, zone: string, field: string): Cron {
  if (pattern.trim().split(/\s+/).length !== 5) throw errors.validation(`${field}.cron`, 'must have five fields: minute hour day-of-month month day-of-week')
  try {
    return new Cron(pattern, { timezone: zone, paused: true })
  } catch (e) {
    throw errors.validation(`${field}.cron`, `is not a valid cron expression (${(e as Error).message.replace(/^CronPattern: /, '')})`)
  }
}

function checkZone(zone: string, field: string) {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
  } catch {
    throw errors.validation(`${field}.time_zone`, 'is not an IANA time zone name (such as Europe/Paris)')
  }
}

/** The schedule of a request, checked: exactly one kind, a valid cron and zone, the minimum interval. */
export function parseSchedule(input: { at?: string; cron?: string; time_zone?: string; every_minutes?: number }, now: Date, field = 'schedule'): Schedule {
  const kinds = [input.at !== undefined, input.cron !== undefined, input.every_minutes !== undefined].filter(Boolean).length
  if (kinds !== 1) throw errors.validation(field, 'needs exactly one of at, cron and every_minutes')
  if (input.time_zone !== undefined && input.cron === undefined) throw errors.validation(`${field}.time_zone`, 'goes only with cron')
  if (input.at !== undefined) {
    const at = parseTimestamp(`${field}.at`, input.at)
    if (at.getTime() <= now.getTime()) throw errors.validation(`${field}.at`, 'must be in the future')
    return { schedule_type: 'at', run_at: at, cron: null, time_zone: null, every_minutes: null }
  }
  if (input.cron !== undefined) {
    const zone = input.time_zone ?? 'UTC'
    checkZone(zone, field)
    const cron = cronOf(input.cron, zone, field)
    const [a, b] = cron.nextRuns(2, now)
    if (!a) throw errors.validation(`${field}.cron`, 'never fires')
    if (b && b.getTime() - a.getTime() < WAKE_MIN_INTERVAL_MINUTES * 60_000)
      throw errors.validation(`${field}.cron`, `fires more often than every ${WAKE_MIN_INTERVAL_MINUTES} minute`)
    return { schedule_type: 'cron', run_at: null, cron: input.cron.trim(), time_zone: zone, every_minutes: null }
  }
  return { schedule_type: 'every', run_at: null, cron: null, time_zone: null, every_minutes: input.every_minutes! }
}

/**
 * The first slot strictly after `after`, or null when there is none. `every` keeps its cadence
 * from `anchor` (its previous slot, or the time it was scheduled from).
 */
export function nextSlot(s: Schedule, after: Date, anchor: Date = after): Date | null {
  switch (s.schedule_type) {
    case 'at':
      return s.run_at && s.run_at.getTime() > after.getTime() ? s.run_at : null
    case 'cron':
      return cronOf(s.cron!, s.time_zone!, 'schedule').nextRun(after) ?? null
    case 'every': {
      const step = s.every_minutes! * 60_000
      const behind = Math.max(0, Math.floor((after.getTime() - anchor.getTime()) / step) + 1)
      return new Date(anchor.getTime() + behind * step)
    }
  }
}
