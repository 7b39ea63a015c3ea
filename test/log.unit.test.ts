/**
 * The two log formats: JSON lines for machines (LOG_FORMAT=json, the default), short lines for
 * a person (text, make dev's) that leave routine lines out unless LOG_LEVEL=debug.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { log, setLogFormat, setLogLevel } from '../src/log'

/** What the logger writes on stdout while `run` runs. */
function captured(run: () => void): string {
  const write = process.stdout.write
  let text = ''
  process.stdout.write = ((chunk: string) => ((text += chunk), true)) as typeof process.stdout.write
  try {
    run()
  } finally {
    process.stdout.write = write
  }
  return text
}

afterEach(() => {
  setLogFormat('json')
  setLogLevel('silent')
})

describe('LOG_FORMAT=json', () => {
  test('one object per line; a routine line is an info line like any other', () => {
    setLogLevel('info')
    const text = captured(() => {
      log.info('api listening', { port: 3000 })
      log.routine('job', { kind: 'wake.schedule', outcome: 'done', duration_ms: 2 })
    })
    const lines = text
      .trim()
      .split('\n')
      .map(l => JSON.parse(l))
    expect(lines).toMatchObject([
      { level: 'info', msg: 'api listening', port: 3000 },
      { level: 'info', msg: 'job', kind: 'wake.schedule' },
    ])
  })
})

describe('LOG_FORMAT=text', () => {
  test('short lines: time, message, fields; a request and a job read as a person would say them', () => {
    setLogLevel('info')
    setLogFormat('text')
    const text = captured(() => {
      log.info('api listening', { port: 3000, note: 'two words' })
      log.infoJson('request', '"request_id":"req_1","method":"GET","path":"/v1/whoami","status":200,"duration_ms":3.4')
      log.warn('job', { job_id: 'j1', kind: 'webhook.deliver', attempt: 2, duration_ms: 12, outcome: 'retry', error: 'http_500' })
    })
    const lines = text.trim().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d api listening port=3000 note="two words"$/)
    expect(lines[1]).toMatch(/^\d\d:\d\d:\d\d GET \/v1\/whoami 200 3ms$/)
    expect(lines[2]).toMatch(/^\d\d:\d\d:\d\d WARN job webhook\.deliver retry 12ms error=http_500$/)
  })

  test('routine lines are left out, and shown at LOG_LEVEL=debug', () => {
    setLogFormat('text')
    setLogLevel('info')
    expect(captured(() => log.routine('job', { kind: 'wake.schedule', outcome: 'done', duration_ms: 1 }))).toBe('')
    setLogLevel('debug')
    expect(captured(() => log.routine('job', { kind: 'wake.schedule', outcome: 'done', duration_ms: 1 }))).toMatch(/DEBUG job wake\.schedule done 1ms\n$/)
  })

  test('an error line carries the stack on the lines below', () => {
    setLogFormat('text')
    setLogLevel('info')
    const text = captured(() => log.error('request failed', { error: new Error('boom') }))
    expect(text).toMatch(/^\d\d:\d\d:\d\d ERROR request failed error="Error: boom"\nError: boom\n\s+at /)
  })
})
