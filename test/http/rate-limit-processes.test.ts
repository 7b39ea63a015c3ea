/**
 * The rate limit with two processes leasing from one counter: in each window of the database's
 * clock, the requests allowed in all processes together are at most the limit, even when a process
 * reads the database's answer long after it was given (a busy event loop), right at a window's end.
 */
import { expect, test } from 'bun:test'
import { testDatabase } from '../helpers/database'
import { unique } from '../helpers/identity'

const WINDOW_SECONDS = 2
const LIMIT = 1000

function spend(args: Record<string, unknown>): Promise<number[]> {
  const proc = Bun.spawn([process.execPath, `${import.meta.dir}/fixtures/limiter-process.ts`, JSON.stringify(args)], { stdout: 'pipe', stderr: 'inherit' })
  return new Response(proc.stdout).text().then(out => JSON.parse(out))
}

test.skipIf((await testDatabase().catch(() => undefined))?.kind !== 'postgres')(
  'a lease answered after its window ended is not spent in the next one, whose limit another process takes whole',
  async () => {
    const db = await testDatabase()
    const bucket = `test:${unique()}`
    const width = WINDOW_SECONDS * 1000
    // a window's end at least a second away, so that both processes are ready before it
    const end = (Math.floor(Date.now() / width) + 2) * width
    const [late, prompt] = await Promise.all([
      // asks just before the end, and reads the answer (20 requests of the old window) 300 ms after it
      spend({ url: db.url, bucket, limit: LIMIT, windowSeconds: WINDOW_SECONDS, startAt: end - 150, stopAt: end + 900, answerDelayMs: 300 }),
      // spends the next window whole from its first moment
      spend({ url: db.url, bucket, limit: LIMIT, windowSeconds: WINDOW_SECONDS, startAt: end, stopAt: end + 900, answerDelayMs: 0 }),
    ])
    const inNextWindow = [...late, ...prompt].filter(t => t >= end && t < end + width)
    // the prompt process did take the next window's limit, less what the late one leased in it
    expect(prompt.filter(t => t >= end).length).toBeGreaterThan(LIMIT - 100)
    expect(inNextWindow.length).toBeLessThanOrEqual(LIMIT)
  },
  20_000,
)
