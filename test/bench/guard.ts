/**
 * The guard against the next regression (issue 28): each section of `make bench` reports, per
 * path it measures, the service's CPU per unit of work (a request, a message, a delivery, a send,
 * a search: CPU time from /proc, steadier on a shared machine than a rate) and its headline
 * figures, and PostgreSQL's CPU per unit where the section reads it (the database's backends).
 * At the end of the run, each is set against the last accepted figures, kept in the repository in
 * accepted.json: a path whose service or database CPU per unit grew by more than 20% is flagged. The
 * headline figures (rates, latencies) are printed beside them, for information only. With
 * BENCH_ACCEPT=1, the paths measured in this run become the accepted figures (the others stay
 * as they were). A benchmark, not a test: nothing fails on time.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'

/** A path's figures in one run. */
export interface PathFigures {
  /** what one unit of work is: 'request', 'message', 'delivery', 'send', 'search', ... */
  unit: string
  /** the service's CPU per unit, in ms (all its processes) */
  cpu_ms_per_unit: number
  /** PostgreSQL's CPU per unit, in ms (the backends of the bench's database), where the section reads it */
  db_ms_per_unit?: number
  /** the figures the section's targets are about (p99 ms, msg/s, ...), for information */
  headline: Record<string, number>
}

interface Accepted {
  accepted_at: string
  load_average: number
  paths: Record<string, PathFigures>
}

/** A path slower by more than this fraction of its accepted CPU per unit is flagged. */
export const SLOWER_BY = 0.2
const FILE = `${import.meta.dir}/accepted.json`
const measured = new Map<string, PathFigures>()

/** Notes `path`'s figures of this run (a path measured twice keeps its last figures). */
export function report(path: string, figures: PathFigures): void {
  if (!Number.isFinite(figures.cpu_ms_per_unit)) return
  const ms = (v: number) => Math.round(v * 1000) / 1000
  measured.set(path, {
    ...figures,
    cpu_ms_per_unit: ms(figures.cpu_ms_per_unit),
    ...(figures.db_ms_per_unit !== undefined && Number.isFinite(figures.db_ms_per_unit) && { db_ms_per_unit: ms(figures.db_ms_per_unit) }),
  })
}

function accepted(): Accepted | null {
  try {
    return JSON.parse(readFileSync(FILE, 'utf8')) as Accepted
  } catch {
    return null
  }
}

/** `now` against `before` as a signed percentage, and whether it is more than SLOWER_BY slower; null without both. */
function change(now: number | undefined, before: number | undefined): { text: string; slower: boolean } | null {
  if (now === undefined || before === undefined || !(before > 0)) return null
  const c = now / before - 1
  return { text: `${c >= 0 ? '+' : ''}${(c * 100).toFixed(0)}%`, slower: c > SLOWER_BY }
}

/** The line of one path against its accepted figures, and whether it is flagged (its service or its database CPU per unit more than SLOWER_BY slower). */
export function compare(path: string, now: PathFigures, before: PathFigures | undefined): { line: string; flagged: boolean } {
  const same = before && before.unit === now.unit ? before : undefined
  const service = change(now.cpu_ms_per_unit, same?.cpu_ms_per_unit)
  const db = change(now.db_ms_per_unit, same?.db_ms_per_unit)
  const flagged = Boolean(service?.slower || db?.slower)
  const figure = (ms: number | undefined, c: ReturnType<typeof change>) =>
    ms === undefined ? ''.padEnd(22) : `${ms.toFixed(3)} ${(c?.text ?? 'new').padStart(5)}${c?.slower ? '!' : ' '}`.padEnd(22)
  const headline = Object.entries(now.headline)
    .map(([k, v]) => `${k} ${v}${same?.headline[k] !== undefined ? ` (was ${same.headline[k]})` : ''}`)
    .join(', ')
  return {
    line: `${path.padEnd(28)}${now.unit.padEnd(10)}${figure(now.cpu_ms_per_unit, service)}${figure(now.db_ms_per_unit, db)}${flagged ? 'SLOWER  ' : '        '}${headline}`,
    flagged,
  }
}

/** Prints every measured path against the accepted figures; with BENCH_ACCEPT=1 writes this run's figures as the accepted ones. */
export function summarize(): void {
  if (measured.size === 0) return
  const file = accepted()
  console.log(
    `\nguard: the service's CPU per unit of work against the accepted figures (test/bench/accepted.json${file ? `, accepted ${file.accepted_at} at load average ${file.load_average}` : ', none yet'}); ` +
      `flagged when more than ${SLOWER_BY * 100}% slower\n`,
  )
  console.log(`${'path'.padEnd(28)}${'unit'.padEnd(10)}${'service ms, change'.padEnd(22)}${'database ms, change'.padEnd(22)}${''.padEnd(8)}headline (accepted)`)
  const flagged: string[] = []
  for (const [path, now] of measured) {
    const c = compare(path, now, file?.paths[path])
    console.log(c.line)
    if (c.flagged) flagged.push(path)
  }
  console.log(
    flagged.length
      ? `\n${flagged.length} path(s) more than ${SLOWER_BY * 100}% slower per unit of work: ${flagged.join(', ')}`
      : '\nno path slower per unit of work',
  )
  if (process.env.BENCH_ACCEPT === '1') {
    const next: Accepted = {
      accepted_at: new Date().toISOString(),
      load_average: Math.round(loadavg()[0]! * 100) / 100,
      paths: { ...file?.paths, ...Object.fromEntries(measured) },
    }
    writeFileSync(FILE, `${JSON.stringify(next, null, 2)}\n`)
    console.log(`BENCH_ACCEPT=1: ${[...measured.keys()].join(', ')} accepted in test/bench/accepted.json`)
  }
}
