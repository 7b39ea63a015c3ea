/**
 * The webhook receiver of the fan-out benchmark, in a process of its own:
 * `bun test/bench/fanout-receiver.ts <port>`.
 *
 * POST /hook: a webhook delivery. The arrival time (epoch ms, performance.timeOrigin +
 * performance.now(), taken when the request reaches the handler) is recorded under the mark
 * the sender put in the subject (`<prefix>-<i> t=<epoch ms>`); the answer is 200 at once.
 * POST /baseline: the same handler cost without recording (the fetch baseline).
 * GET /results: {arrivals: {mark: epoch ms}, requests, duplicates, unmarked, body_bytes} where
 * body_bytes is the size of the last delivery. POST /reset forgets everything.
 */
const port = Number(process.argv[2])
if (!Number.isInteger(port)) throw new Error('usage: fanout-receiver.ts <port>')

const now = () => performance.timeOrigin + performance.now()
let arrivals = new Map<string, number>()
let requests = 0
let duplicates = 0
let unmarked = 0
let bodyBytes = 0
const MARK = /^\S+ (\S+) t=/

Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(req) {
    const arrived = now()
    const path = new URL(req.url).pathname
    if (req.method === 'POST' && path === '/hook') {
      const body = await req.text()
      requests++
      bodyBytes = body.length
      let subject: unknown
      try {
        subject = JSON.parse(body)?.email?.headers?.subject
      } catch {}
      const mark = typeof subject === 'string' ? MARK.exec(subject)?.[1] : undefined
      if (!mark) unmarked++
      else if (arrivals.has(mark)) duplicates++
      else arrivals.set(mark, arrived)
      return new Response('ok')
    }
    if (req.method === 'POST' && path === '/baseline') {
      await req.text()
      return new Response('ok')
    }
    if (path === '/results') return Response.json({ arrivals: Object.fromEntries(arrivals), requests, duplicates, unmarked, body_bytes: bodyBytes })
    if (path === '/count') return new Response(String(arrivals.size))
    if (req.method === 'POST' && path === '/reset') {
      arrivals = new Map()
      requests = duplicates = unmarked = 0
      return new Response('ok')
    }
    if (path === '/health') return new Response('ok')
    return new Response('not found', { status: 404 })
  },
})
