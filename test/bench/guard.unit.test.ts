/** The bench's regression guard (test/bench/guard.ts): which paths it flags against the accepted figures. No timing here. */
import { describe, expect, test } from 'bun:test'
import { compare, type PathFigures } from './guard'

const accepted: PathFigures = { unit: 'message', cpu_ms_per_unit: 1, db_ms_per_unit: 2, headline: { p99_ms: 10 } }
const now = (cpu: number, db?: number, unit = 'message'): PathFigures => ({
  unit,
  cpu_ms_per_unit: cpu,
  ...(db !== undefined && { db_ms_per_unit: db }),
  headline: { p99_ms: 12 },
})

describe('bench guard', () => {
  test('a path more than 20% slower per unit of work, in the service or in the database, is flagged', () => {
    expect(compare('waiters', now(1.21, 2), accepted).flagged).toBe(true)
    expect(compare('waiters', now(1, 2.5), accepted).flagged).toBe(true)
    expect(compare('waiters', now(1, 2.5), accepted).line).toContain('SLOWER')
  })

  test('up to 20% slower, faster, or nothing accepted to compare with is not flagged', () => {
    expect(compare('waiters', now(1.19, 2.39), accepted).flagged).toBe(false)
    expect(compare('waiters', now(0.5, 1), accepted).flagged).toBe(false)
    expect(compare('waiters', now(9, 9), undefined).flagged).toBe(false)
    // another unit of work is another measure: nothing to compare
    expect(compare('waiters', now(9, 9, 'request'), accepted).flagged).toBe(false)
  })

  test('the line shows the change and the headline figures beside the accepted ones', () => {
    const { line } = compare('waiters', now(1.5, 1), accepted)
    expect(line).toContain('+50%')
    expect(line).toContain('-50%')
    expect(line).toContain('p99_ms 12 (was 10)')
  })
})
