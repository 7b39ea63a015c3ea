/** Assertions on the v1 envelopes shared by the HTTP tests. */
import { expect } from 'bun:test'
import type { TestResponse } from './app'

/** No stack frames, source paths or SQL in anything a client sees. */
export function expectNoLeak(res: TestResponse) {
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body)
  expect(text).not.toMatch(/\n\s+at |\bat \S+ \(|\.ts:\d+|\.js:\d+|node_modules/)
  expect(text).not.toMatch(/\bselect\b|\binsert into\b|\bupdate \w+ set\b|postgres|relation "|syntax error/i)
  expect(text.toLowerCase()).not.toContain('stack')
}

/** A request id on every response. */
export function expectRequestId(res: TestResponse) {
  expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/)
}

/** `{success: false, error: {code, message}}` with the status of the code, and nothing leaked. */
export function expectError(res: TestResponse, status: number, code: string, message?: string | RegExp) {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code })
  expect(res.body.success).toBe(false)
  expect(typeof res.body.error.message).toBe('string')
  expect(Object.keys(res.body).sort()).toEqual(['error', 'success'])
  for (const k of Object.keys(res.body.error)) expect(['code', 'message', 'details', 'gates']).toContain(k)
  if (message instanceof RegExp) expect(res.body.error.message).toMatch(message)
  else if (message !== undefined) expect(res.body.error.message).toBe(message)
  expect(res.headers.get('content-type')).toStartWith('application/json')
  expectRequestId(res)
  expectNoLeak(res)
  expectConsistent(res)
}

/**
 * What the one way of making errors guarantees: a "not now" error carries Retry-After and its
 * message says the same number of seconds; every docs_url is an absolute URL.
 */
function expectConsistent(res: TestResponse) {
  const error = res.body.error
  if (res.status === 429 || ['slow_down', 'database_unavailable'].includes(error.code)) {
    const seconds = res.headers.get('retry-after')
    expect(seconds).toMatch(/^[1-9]\d*$/)
    expect(error.message).toEndWith(`; retry after ${seconds} second${seconds === '1' ? '' : 's'}`)
  }
  for (const url of [error.details?.docs_url, ...(error.gates ?? []).map((g: { docs_url?: string }) => g.docs_url)]) {
    if (url !== undefined) expect(url).toMatch(/^https?:\/\/[^/]+\/docs/)
  }
}

/** `{success: true, data}` with the given status; returns data. */
export function expectOk(res: TestResponse, status = 200): any {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`)
  expect(res.body.success).toBe(true)
  expect('data' in res.body).toBe(true)
  expectRequestId(res)
  return res.body.data
}
