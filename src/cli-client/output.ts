/**
 * Terminal output: aligned tables (cli-table3, which measures wide and colored text correctly),
 * colors only on a terminal and never with NO_COLOR (picocolors), relative times, and a progress
 * bar for uploads (cli-progress) drawn on stderr so stdout stays clean for pipes.
 */
import { createInterface } from 'node:readline'
import Table from 'cli-table3'
import cliProgress from 'cli-progress'
import pc from 'picocolors'
import { CliError } from './api'

export const color = pc.createColors(Boolean(process.stdout.isTTY) && !process.env.NO_COLOR)

type Cell = string | number | null | undefined

/** A list for a person: a table of a row per item, or `none` (what to do first) when there is no item. */
export const listing = <T>(items: T[], head: string[], row: (item: T) => Cell[], none?: string): string =>
  !items.length && none !== undefined ? none : table(head, items.map(row)) + '\n'

export function table(head: string[], rows: Cell[][]): string {
  const t = new Table({
    head: head.map(h => color.bold(h)),
    style: { head: [], border: [], compact: true, 'padding-left': 0, 'padding-right': 2 },
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '',
    },
  })
  for (const row of rows) t.push(row.map(v => (v === null || v === undefined ? '' : String(v))))
  return t.toString()
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['year', 365 * 86400],
  ['month', 30 * 86400],
  ['week', 7 * 86400],
  ['day', 86400],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
]
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' })

/** "3 minutes ago", "in 2 hours", "now". */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return ''
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000)
  if (Math.abs(seconds) < 5) return 'now'
  for (const [unit, size] of UNITS) if (Math.abs(seconds) >= size) return relative.format(Math.trunc(seconds / size), unit)
  return 'now'
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}

export const address = (a: { address: string; name?: string } | null | undefined) => (a ? (a.name ? `${a.name} <${a.address}>` : a.address) : '')

export function printJson(value: unknown) {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

/** A progress bar on stderr when it is a terminal; a no-op otherwise (pipes, tests). */
export function progressBar(total: number, label: string) {
  if (!process.stderr.isTTY) return { update: (_n: number) => {}, stop: () => {} }
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: `${label} [{bar}] {percentage}% {value}/{total} bytes`, hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  )
  bar.start(total, 0)
  return { update: (n: number) => bar.update(n), stop: () => bar.stop() }
}

/** How a failure is shown: the service's message, its code, and where to read more. */
export function printError(error: unknown, json: boolean) {
  if (error instanceof CliError) {
    if (json) {
      process.stderr.write(JSON.stringify(error.body ?? { success: false, error: { code: error.code ?? 'cli_error', message: error.message } }) + '\n')
      return
    }
    process.stderr.write(`${color.red('error')}: ${error.message}${error.code ? color.dim(` (${error.code})`) : ''}\n`)
    if (error.docsUrl) process.stderr.write(`${color.dim('docs')}: ${error.docsUrl}\n`)
    return
  }
  process.stderr.write(`${color.red('error')}: ${(error as Error).message}\n`)
}

/** Lines of piped stdin, read by one reader for the whole run (a second reader would lose what the first buffered). */
let piped: AsyncIterator<string> | null = null

/**
 * The question, then one line typed at the terminal, read in raw mode: echoed to stderr unless it is a secret,
 * backspace honoured, Ctrl-C exits, Ctrl-D ends. The listener is removed after the line, so the
 * next question reads the next one.
 */
function typedLine(question: string, echo: boolean): Promise<string> {
  const stdin = process.stdin
  // raw before the question shows: what is typed (or pasted) as soon as it shows is never echoed by the terminal
  stdin.setRawMode(true)
  process.stderr.write(`${question} `)
  return new Promise(resolve => {
    let text = ''
    const done = () => {
      stdin.off('data', onData)
      stdin.setRawMode(false)
      stdin.pause()
      process.stderr.write('\n')
      resolve(text.trim())
    }
    const onData = (chunk: Buffer) => {
      for (const ch of String(chunk)) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return done()
        if (ch === '\u0003') {
          stdin.setRawMode(false)
          process.exit(130)
        }
        if (ch === '\u007f' || ch === '\b') {
          if (text && echo) process.stderr.write('\b \b')
          text = text.slice(0, -1)
        } else {
          text += ch
          if (echo) process.stderr.write(ch)
        }
      }
    }
    stdin.resume()
    stdin.on('data', onData)
  })
}

/**
 * Asks a question on stderr (stdout stays the command's output, clean for --json and pipes) and
 * reads one line of stdin; a secret is not echoed on a terminal. '' when stdin has ended.
 */
export async function ask(question: string, opts: { secret?: boolean } = {}): Promise<string> {
  if (process.stdin.isTTY) return typedLine(question, !opts.secret)
  process.stderr.write(`${question} `)
  piped ??= createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]()
  const next = await piped.next()
  // nothing echoed the answer's line end: end the question's line
  process.stderr.write('\n')
  return next.done ? '' : next.value.trim()
}
