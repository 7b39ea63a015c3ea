import { describe, expect, test } from 'bun:test'
import { ApiError } from '../../src/errors'
import { iso, parseTimestamp } from '../../src/http/timestamps'

function rejection(value: string): ApiError {
  try {
    parseTimestamp('since', value)
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError)
    return e as ApiError
  }
  throw new Error(`${value} was accepted`)
}

describe('parseTimestamp: accepted forms', () => {
  test('Z is UTC', () => {
    expect(parseTimestamp('since', '2026-11-22T09:30:00Z').toISOString()).toBe('2026-11-22T09:30:00.000Z')
    expect(parseTimestamp('since', '2026-11-22T09:30:00z').toISOString()).toBe('2026-11-22T09:30:00.000Z')
  })

  test('a positive offset names an earlier UTC instant', () => {
    expect(parseTimestamp('since', '2026-11-22T09:30:00+02:00').toISOString()).toBe('2026-11-22T07:30:00.000Z')
  })

  test('a negative offset names a later UTC instant, across a date line', () => {
    expect(parseTimestamp('since', '2026-11-22T22:15:00-05:30').toISOString()).toBe('2026-11-23T03:45:00.000Z')
  })

  test('offset without colon and +00:00', () => {
    expect(parseTimestamp('since', '2026-11-22T09:30:00+0100').toISOString()).toBe('2026-11-22T08:30:00.000Z')
    expect(parseTimestamp('since', '2026-11-22T09:30:00+00:00').toISOString()).toBe('2026-11-22T09:30:00.000Z')
  })

  test('fractional seconds are kept to the millisecond', () => {
    expect(parseTimestamp('since', '2026-11-22T09:30:00.5Z').toISOString()).toBe('2026-11-22T09:30:00.500Z')
    expect(parseTimestamp('since', '2026-11-22T09:30:00.123456789Z').toISOString()).toBe('2026-11-22T09:30:00.123Z')
    expect(parseTimestamp('since', '2026-11-22T09:30:00.250+01:00').toISOString()).toBe('2026-11-22T08:30:00.250Z')
  })

  test('minutes without seconds', () => {
    expect(parseTimestamp('since', '2026-11-22T09:30Z').toISOString()).toBe('2026-11-22T09:30:00.000Z')
  })

  test('leap day of a leap year', () => {
    expect(parseTimestamp('since', '2028-02-29T00:00:00Z').toISOString()).toBe('2028-02-29T00:00:00.000Z')
  })

  test('iso renders UTC and passes null through', () => {
    expect(iso(new Date('2026-11-22T09:30:00+02:00'))).toBe('2026-11-22T07:30:00.000Z')
    expect(iso(null)).toBeNull()
  })
})

describe('parseTimestamp: rejected forms are validation errors naming the field', () => {
  test('a time without zone', () => {
    const e = rejection('2026-11-22T09:30:00')
    expect(e.code).toBe('validation_error')
    expect(e.status).toBe(400)
    expect(e.message).toMatch(/^since: .*time zone/)
  })

  test('a bare date', () => {
    const e = rejection('2026-11-22')
    expect(e.code).toBe('validation_error')
    expect(e.message).toMatch(/^since: .*bare date/)
  })

  test('an invalid calendar date does not roll over', () => {
    expect(rejection('2026-02-30T10:00:00Z').message).toBe('since: is not a valid calendar date and time')
    expect(rejection('2026-02-29T10:00:00Z').code).toBe('validation_error') // 2026 is not a leap year
    expect(rejection('2026-13-01T10:00:00Z').code).toBe('validation_error')
    expect(rejection('2026-04-31T10:00:00Z').code).toBe('validation_error')
  })

  test('out-of-range time and offset', () => {
    expect(rejection('2026-11-22T24:00:00Z').code).toBe('validation_error')
    expect(rejection('2026-11-22T23:60:00Z').code).toBe('validation_error')
    expect(rejection('2026-11-22T23:59:60Z').code).toBe('validation_error')
    expect(rejection('2026-11-22T10:00:00+24:00').message).toBe('since: has an invalid UTC offset')
  })

  test('garbage, epoch numbers and other formats', () => {
    for (const v of ['', 'yesterday', '1763800000', '22/11/2026 10:00Z', '2026-11-22 09:30:00Z', 'Sun, 22 Nov 2026 09:30:00 GMT']) {
      expect(rejection(v).message).toStartWith('since: ')
    }
  })
})
