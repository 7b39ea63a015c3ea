/** The pattern language of filters and routes: matching, validation and normalization. */
import { describe, expect, test } from 'bun:test'
import { isExactAddress, matchesPattern, normalizePattern, patternDomain, patternProblem } from '../../src/webhooks/patterns'

describe('matchesPattern', () => {
  const cases: [string, string, boolean][] = [
    ['boss@example.com', 'boss@example.com', true],
    ['boss@example.com', 'BOSS@Example.COM', true],
    ['boss@example.com', 'boss2@example.com', false],
    ['boss@example.com', 'boss@example.com.evil', false],
    ['@example.com', 'anyone@example.com', true],
    ['@example.com', 'anyone@sub.example.com', false],
    ['@example.com', 'anyone@notexample.com', false],
    ['*@example.com', 'anyone@example.com', true],
    ['*@example.com', 'anyone@sub.example.com', false],
    ['*@*.example.com', 'anyone@sub.example.com', true],
    ['*@*.example.com', 'anyone@example.com', false],
    ['billing-*@*', 'billing-eu@anywhere.example', true],
    ['billing-*@*', 'billing@anywhere.example', false],
    ['*', 'anything@at.all', true],
    ['*', '', true],
    ['a*b*c@x.example', 'abc@x.example', true],
    ['a*b*c@x.example', 'aXXbYYc@x.example', true],
    ['a*b*c@x.example', 'acb@x.example', false],
    // regex metacharacters are literal
    ['a.b@x.example', 'axb@x.example', false],
    ['a+tag@x.example', 'a+tag@x.example', true],
    ['a+tag@x.example', 'aatag@x.example', false],
    ['(a)?@x.example', '(a)?@x.example', true],
    ['[ab]@x.example', 'a@x.example', false],
    ['^a$@x.example', '^a$@x.example', true],
    // an unnormalized pattern still matches as stored
    ['  Boss@Example.com ', 'boss@example.com', true],
  ]
  test.each(cases)('%p against %p is %p', (pattern, address, expected) => expect(matchesPattern(pattern, address)).toBe(expected))

  test('many stars cannot make matching slow', () => {
    const pattern = `${'*a'.repeat(200)}*b@x.example`
    const address = `${'a'.repeat(300)}@x.example`
    const started = performance.now()
    expect(matchesPattern(pattern, address)).toBe(false)
    expect(performance.now() - started).toBeLessThan(200)
  })
})

describe('patternProblem', () => {
  test.each(['boss@example.com', '@example.com', '*@example.com', 'billing-*@*', '*', '**', '*@*.example.com', 'a@b', 'ünï@example.com'])('%p is valid', p =>
    expect(patternProblem(p)).toBeNull(),
  )

  const invalid: [string, string][] = [
    ['', 'must not be empty'],
    [`${'a'.repeat(490)}@example.com`, 'must be at most 500 characters'],
    ['boss @example.com', 'must not contain spaces'],
    ['boss@example.com\t', 'must not contain spaces'],
    ['boss\u0000@example.com', 'must not contain control characters'],
    ['example.com', 'must be an address, an @domain, or a pattern with * such as *@example.com'],
    ['boss*', 'must be an address, an @domain, or a pattern with * such as *@example.com'],
    ['a@b@example.com', 'must contain at most one @'],
    ['boss@', 'must have a domain (or *) after the @'],
    ['@', 'must have a domain (or *) after the @'],
    ['boss@.example.com', 'must have a well-formed domain after the @'],
    ['boss@example.com.', 'must have a well-formed domain after the @'],
    ['boss@example..com', 'must have a well-formed domain after the @'],
  ]
  test.each(invalid)('%p: %s', (p, problem) => expect(patternProblem(p)).toBe(problem))
})

describe('helpers', () => {
  test('normalizePattern trims and lowercases', () => expect(normalizePattern('  *@Example.COM \n')).toBe('*@example.com'))

  test('isExactAddress', () => {
    expect(isExactAddress('boss@example.com')).toBe(true)
    expect(isExactAddress('@example.com')).toBe(false)
    expect(isExactAddress('b*@example.com')).toBe(false)
  })

  test('patternDomain: the one domain a pattern names, or null', () => {
    expect(patternDomain('boss@Example.com')).toBe('example.com')
    expect(patternDomain('@example.com')).toBe('example.com')
    expect(patternDomain('*@example.com')).toBe('example.com')
    expect(patternDomain('*@*.example.com')).toBeNull()
    expect(patternDomain('billing-*@*')).toBeNull()
    expect(patternDomain('*')).toBeNull()
  })
})
