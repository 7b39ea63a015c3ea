/**
 * A service near its open-file limit (src/connection-budget.ts) refuses the connections past its
 * budget at once (HTTP 429 in the envelope, then close) instead of leaving them queued behind a
 * failing accept() while its event loop spins; it serves again as soon as connections close.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import net from 'node:net'
import { RESERVED_FDS } from '../src/connection-budget'
import { testDatabase } from './helpers/database'
import { spawnService } from './helpers/service-process'
import { until } from './helpers/until'

const db = await testDatabase()
const cleanup: (() => unknown)[] = []
afterAll(() => {
  for (const fn of cleanup) fn()
})

/** A connection that records what it is sent and whether the server closed it. */
function open(port: number) {
  const c = { text: '', closed: false, socket: net.connect(port, '127.0.0.1') }
  c.socket.on('data', chunk => (c.text += chunk.toString()))
  c.socket.on('close', () => (c.closed = true))
  c.socket.on('error', () => {})
  return c
}

describe.skipIf(db.kind !== 'postgres')('near the open-file limit', () => {
  test('connections past the budget are refused with 429 and closed; the service serves again once they go', async () => {
    const LIMIT = RESERVED_FDS + 100
    const s = await spawnService({ ROLES: 'api' }, { openFiles: LIMIT })
    cleanup.push(() => s.proc.kill(9))
    // more connections than the process has files for
    const conns = Array.from({ length: 150 }, () => open(s.apiPort!))
    await until(
      async () => conns.filter(c => c.closed).length,
      n => n >= 50,
    )
    const refused = conns.filter(c => c.closed)
    expect(refused.length).toBeGreaterThanOrEqual(50)
    for (const c of refused) expect(c.text).toStartWith('HTTP/1.1 429 ')
    // the ones held are served: the process did not run out of files
    const held = conns.find(c => !c.closed)!
    held.socket.write('GET /v1/health HTTP/1.1\r\nHost: a\r\n\r\n')
    await until(
      async () => held.text,
      t => t.includes('\r\n\r\n'),
    )
    expect(held.text).toStartWith('HTTP/1.1 200 ')
    for (const c of conns) c.socket.destroy()
    await until(
      async () => (await fetch(`http://127.0.0.1:${s.apiPort}/v1/health`).catch(() => undefined))?.status,
      status => status === 200,
    )
  })
})
