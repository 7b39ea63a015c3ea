/**
 * A worker keeps hearing new jobs after its LISTEN connection was cut off (src/db/listener.ts):
 * a job enqueued while the connection was down runs when it listens again, and jobs after that
 * are heard at once, however long the database stayed unreachable. The worker polls once a
 * minute, longer than this test may take, so what runs was heard. The outage is a TCP proxy in
 * front of the test database (test/helpers/tcp-proxy.ts).
 */
import { afterAll, expect, test } from 'bun:test'
import { enqueue } from '../../src/jobs/queue'
import { startWorker } from '../../src/jobs/worker'
import type { JobKind } from '../../src/jobs/kind'
import { testApp } from '../helpers/app'
import { testDatabase } from '../helpers/database'
import { proxiedDatabase } from '../helpers/tcp-proxy'
import { until } from '../helpers/until'

const db = await testDatabase()
const { proxy, sql: proxied } = proxiedDatabase(db.url, 4)

afterAll(async () => {
  proxy.cut()
  await proxied.end({ timeout: 1 })
})

test.skipIf(db.kind !== 'postgres')(
  'a job enqueued while LISTEN was cut off runs when it listens again, and jobs after it are heard',
  async () => {
    const { ctx } = await testApp()
    const ran: string[] = []
    const kind: JobKind<{ name: string }> = { kind: `test.listen.${crypto.randomUUID()}`, handle: async (_, p) => void ran.push(p.name) }
    const worker = await startWorker({ ...ctx, sql: proxied }, { listen: true, pollMs: 60_000, kinds: [kind] })
    try {
      await worker.drain()
      await enqueue(db.sql, kind.kind, { name: 'before' })
      await until(
        async () => ran.length,
        n => n === 1,
        10_000,
      )

      // cut off for longer than the first attempt to listen again
      proxy.cut()
      await enqueue(db.sql, kind.kind, { name: 'during' })
      await Bun.sleep(1_500)
      proxy.open()
      await until(
        async () => ran.length,
        n => n === 2,
        15_000,
      )

      await Bun.sleep(100)
      await enqueue(db.sql, kind.kind, { name: 'after' })
      await until(
        async () => ran.length,
        n => n === 3,
        10_000,
      )
      expect(ran).toEqual(['before', 'during', 'after'])
    } finally {
      await worker.stop(1000)
    }
  },
  45_000,
)
