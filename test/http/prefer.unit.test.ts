import { expect, test } from 'bun:test'
import { prefersRespondAsync } from '../../src/http/prefer'

test('respond-async among the preferences of a Prefer header (RFC 7240), case-insensitive, with parameters; nothing else counts', () => {
  expect(prefersRespondAsync(undefined)).toBe(false)
  expect(prefersRespondAsync('')).toBe(false)
  expect(prefersRespondAsync('respond-async')).toBe(true)
  expect(prefersRespondAsync('Respond-Async')).toBe(true)
  expect(prefersRespondAsync('return=minimal, respond-async; foo=bar')).toBe(true)
  expect(prefersRespondAsync(' wait=10 ,respond-async')).toBe(true)
  expect(prefersRespondAsync('return=minimal')).toBe(false)
  expect(prefersRespondAsync('respond-asynchronously')).toBe(false)
  expect(prefersRespondAsync('foo="respond-async"')).toBe(false)
  expect(prefersRespondAsync('foo="a, respond-async"')).toBe(false)
  expect(prefersRespondAsync('x; respond-async')).toBe(false)
})
