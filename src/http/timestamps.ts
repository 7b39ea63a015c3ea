/**
 * Convention 4: client timestamps are ISO 8601 with `Z` or a numeric offset; the offset is
 * converted to the UTC instant it names. A time without a zone, or a bare date, is rejected.
 */
import { t } from 'elysia'
import { errors } from '../errors'

const ZONED = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})$/i

/** The UTC instant of a zoned ISO 8601 timestamp; throws `validation_error` naming `field`. */
export function parseTimestamp(field: string, value: string): Date {
  const m = ZONED.exec(value)
  if (!m) {
    const reason = /^\d{4}-\d{2}-\d{2}$/.test(value)
      ? 'must be a date and time, not a bare date'
      : /^\d{4}-\d{2}-\d{2}T[\d:.]+$/.test(value)
        ? 'must carry a time zone (Z or a numeric offset such as +02:00)'
        : 'must be an ISO 8601 timestamp with a time zone'
    throw errors.validation(field, reason)
  }
  const [, y, mo, d, h, mi, s = '0', frac = '0', zone = 'Z'] = m
  const fields = [Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)]
  const [year, month, day, hour, minute, second] = fields as [number, number, number, number, number, number]
  const local = Date.UTC(year, month - 1, day, hour, minute, second, Number(frac.padEnd(3, '0').slice(0, 3)))
  const probe = new Date(local)
  // Date.UTC rolls 2026-02-30 over into March; a real calendar date must survive the round trip.
  if (probe.getUTCMonth() !== month - 1 || probe.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    throw errors.validation(field, 'is not a valid calendar date and time')
  }
  let offsetMinutes = 0
  if (zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1
    const digits = zone.slice(1).replace(':', '')
    const oh = Number(digits.slice(0, 2))
    const om = Number(digits.slice(2))
    if (oh > 23 || om > 59) throw errors.validation(field, 'has an invalid UTC offset')
    offsetMinutes = sign * (oh * 60 + om)
  }
  return new Date(local - offsetMinutes * 60_000)
}

/**
 * The first instant shown after `value`. Timestamps leave the service in milliseconds while
 * PostgreSQL keeps microseconds, so a row shown as `value` may be stored up to 999 µs after it;
 * filters compare at the precision shown. An inclusive upper bound ("at or before") is
 * `col < afterShown(v)` and an exclusive lower bound ("after") `col >= afterShown(v)`; an
 * inclusive lower bound is `col >= v` as it is. Moving the bound rather than truncating the
 * column keeps the column's index usable. (`parseTimestamp` keeps milliseconds only.)
 */
export const afterShown = (value: Date): Date => new Date(value.getTime() + 1)

/** The schema of a timestamp query or body field; parse it with `parseTimestamp` in the service. */
export const Timestamp = (description: string) =>
  t.String({ description: `${description}. ISO 8601 with Z or a numeric offset, e.g. 2026-11-22T09:30:00Z`, examples: ['2026-11-22T09:30:00Z'] })

/** Timestamps leave the service in UTC ISO 8601. */
export function iso(value: Date | string | null): string | null {
  return value === null ? null : new Date(value).toISOString()
}
