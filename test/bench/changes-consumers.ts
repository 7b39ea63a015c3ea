/**
 * Long-polling consumers for the changes-feed section of `make bench`, run as their own process:
 * `bun test/bench/changes-consumers.ts <changes|emails> <api-url> <key> <consumers> <prefix> <count> <deadline-ms>`.
 *
 * Each consumer long-polls (wait=30) and notes, on the shared epoch clock, when each message
 * marked `<prefix>-<i>` reached it: `changes` follows GET /v1/changes from the cursor of now
 * (types=email.received), `emails` follows GET /v1/emails with since = the newest received_at
 * seen. A consumer stops once it has all `count` marks or at the deadline. Prints one JSON
 * object: per consumer [mark index, epoch ms] pairs, and how many changes came twice.
 */
import { epochMs } from './common'

const [mode, apiUrl, key, consumersArg, prefix, countArg, deadlineArg] = process.argv.slice(2)
if (!mode || !apiUrl || !key || !consumersArg || !prefix || !countArg || !deadlineArg) {
  throw new Error('usage: changes-consumers.ts <changes|emails> <api-url> <key> <consumers> <prefix> <count> <deadline-ms>')
}
const count = Number(countArg)
const deadline = Date.now() + Number(deadlineArg)
const headers = { authorization: `Bearer ${key}` }
const markOf = new RegExp(`${prefix}-(\\d+) t=`)

async function get(path: string): Promise<{ data: any[]; meta?: { cursor: string } }> {
  const res = await fetch(`${apiUrl}${path}`, { headers, signal: AbortSignal.timeout(Math.max(1000, deadline - Date.now())) })
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  return (await res.json()) as { data: any[]; meta?: { cursor: string } }
}

async function consumer(): Promise<{ arrivals: [number, number][]; duplicates: number }> {
  const arrivals: [number, number][] = []
  const seen = new Set<string>()
  let duplicates = 0
  const note = (id: string, subject: string, at: number) => {
    if (seen.has(id)) {
      duplicates++
      return
    }
    seen.add(id)
    const m = markOf.exec(subject)
    if (m) arrivals.push([Number(m[1]), at])
  }
  let cursor = mode === 'changes' ? ((await get('/v1/changes/cursor')) as unknown as { data: { cursor: string } }).data.cursor : null
  let since = new Date().toISOString()
  try {
    while (arrivals.length < count && Date.now() < deadline) {
      if (mode === 'changes') {
        const page = await get(`/v1/changes?cursor=${encodeURIComponent(cursor!)}&wait=30&types=email.received&limit=500`)
        const at = epochMs()
        for (const c of page.data) note(c.id, c.data.subject, at)
        cursor = page.meta!.cursor
      } else {
        const page = await get(`/v1/emails?wait=30&limit=100&since=${encodeURIComponent(since)}`)
        const at = epochMs()
        for (const e of page.data) {
          note(e.id, e.subject, at)
          if (e.received_at > since) since = e.received_at
        }
      }
    }
  } catch (e) {
    if (Date.now() < deadline) throw e
  }
  return { arrivals, duplicates }
}

const results = await Promise.all(Array.from({ length: Number(consumersArg) }, () => consumer()))
console.log(JSON.stringify({ consumers: results.map(r => r.arrivals), duplicates: results.reduce((n, r) => n + r.duplicates, 0) }))
process.exit(0)
