/**
 * The reads of the big-mailbox benchmark, one client, one request at a time (latency, not
 * throughput), run as its own process:
 * `bun test/bench/mailbox-load.ts <base-url> <api-key> <mode> <seconds> [thread-ids-file]`.
 *
 * Modes: `list` (GET /v1/emails?limit=50), `thread` (GET /v1/threads/{id}, ids drawn from the
 * file, one per line), `walk` (GET /v1/emails?limit=10 and its cursor, page after page to page
 * 100, then again from the first; each page counted), `search` (GET /v1/search?q=<word>&limit=50,
 * the word drawn as the seeded bodies draw theirs: from the most common to ones in a few
 * messages). After 1 s of warm-up, for `seconds`. Prints one JSON object: requests (measured),
 * sends (the warm-up's too), errors,
 * p50/p99 ms, and for `walk` the p50 of a whole walk to page 100.
 */
import { closedLoop, percentile } from './common'
import { randomWord } from '../helpers/mailbox-seed'

const [base, key, mode, secondsArg = '5', idsFile] = process.argv.slice(2)
if (!base || !key || !mode) throw new Error('usage: mailbox-load.ts <base-url> <api-key> <list|thread|walk|search> <seconds> [thread-ids-file]')
const headers = { authorization: `Bearer ${key}` }
const threadIds = idsFile ? (await Bun.file(idsFile).text()).trim().split('\n') : []
const WALK_PAGES = 100

async function get(path: string): Promise<{ ok: boolean; body: { meta?: { cursor: string | null } } }> {
  try {
    const res = await fetch(`${base}${path}`, { headers, keepalive: true })
    const body = (await res.json()) as { meta?: { cursor: string | null } }
    return { ok: res.status === 200, body }
  } catch {
    return { ok: false, body: {} }
  }
}

let cursor: string | null = null
let page = 0
let walkStarted = 0
const walks: number[] = []

const attempt: Record<string, () => Promise<boolean>> = {
  list: async () => (await get('/v1/emails?limit=50')).ok,
  thread: async () => (await get(`/v1/threads/${threadIds[Math.floor(Math.random() * threadIds.length)]}`)).ok,
  search: async () => (await get(`/v1/search?limit=50&q=${randomWord()}`)).ok,
  walk: async () => {
    if (page === 0) walkStarted = performance.now()
    const r = await get(`/v1/emails?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    cursor = r.body.meta?.cursor ?? null
    page++
    if (page === WALK_PAGES || !cursor) {
      if (page === WALK_PAGES) walks.push(performance.now() - walkStarted)
      page = 0
      cursor = null
    }
    return r.ok
  },
}
const run = attempt[mode]
if (!run) throw new Error(`unknown mode ${mode}`)

const { sends, ok, latencies } = await closedLoop({ connections: 1, durationMs: Number(secondsArg) * 1000, measureFailures: true }, run)
walks.sort((a, b) => a - b)
console.log(
  JSON.stringify({
    requests: latencies.length,
    sends,
    errors: sends - ok,
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
    ...(mode === 'walk' ? { walks: walks.length, walk_p50_ms: percentile(walks, 50) } : {}),
  }),
)
