/**
 * Logging on stdout, filtered by LOG_LEVEL, in one of two formats (LOG_FORMAT): `json`, one
 * object per line for machines (the default, which production keeps), or `text`, short lines
 * for a person (`make dev`'s default) that leave out routine lines: `log.routine` is an info
 * line in JSON and shows in text only at LOG_LEVEL=debug (a periodic job that did its round).
 */
const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const
export type LogLevel = keyof typeof levels
export type LogFormat = 'json' | 'text'

let threshold: number = levels.info
let format: LogFormat = 'json'

export function setLogLevel(level: LogLevel) {
  threshold = levels[level]
}

export function setLogFormat(to: LogFormat) {
  format = to
}

const replacer = (_k: string, v: unknown) =>
  v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : typeof v === 'bigint' ? v.toString() : v

/** Fields that JSON.stringify renders as they are: no Error, bigint or nested value, no key of the line's own. */
function plain(fields: Record<string, unknown>): boolean {
  for (const key in fields) {
    const v = fields[key]
    if ((v !== null && typeof v === 'object') || typeof v === 'bigint' || key === 'time' || key === 'level' || key === 'msg') return false
  }
  return true
}

// The time of a line, formatted once per millisecond: one request log line each is the common case.
let stampMs = 0
let stamp = ''
function now(): string {
  const ms = Date.now()
  if (ms !== stampMs) {
    stampMs = ms
    stamp = new Date(ms).toISOString()
  }
  return stamp
}

function write(level: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) {
  if (levels[level] < threshold) return
  if (format === 'text') return void process.stdout.write(textLine(level, msg, fields ?? {}))
  // flat fields are written as they are, without the replacer and the merged copy (the request log line's path)
  if (!fields || plain(fields)) return writeJson(level, msg, fields ? JSON.stringify(fields).slice(1, -1) : '')
  process.stdout.write(JSON.stringify({ time: now(), level, msg, ...fields }, replacer) + '\n')
}

/**
 * A line whose fields are JSON already (`"name":value,...`, no key of the line's own): the
 * request log line, written once per request, builds no object to serialize. Its callers check
 * the level.
 */
function writeJson(level: Exclude<LogLevel, 'silent'>, msg: string, fieldsJson: string) {
  if (format === 'text') return void process.stdout.write(textLine(level, msg, JSON.parse(`{${fieldsJson}}`)))
  process.stdout.write(`{"time":"${now()}","level":"${level}","msg":${JSON.stringify(msg)}${fieldsJson ? `,${fieldsJson}` : ''}}\n`)
}

/** A value as a person reads it: text bare unless it has spaces, an error by its message. */
function shown(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(`${v.name}: ${v.message}`)
  if (typeof v === 'string') return /^[^\s"=]*$/.test(v) && v !== '' ? v : JSON.stringify(v)
  return typeof v === 'bigint' ? v.toString() : JSON.stringify(v, replacer)
}

/** `12:03:04 WARN msg key=value ...`; a request reads `GET /path 200 3ms`, a job `job kind done 12ms`. */
function textLine(level: Exclude<LogLevel, 'silent'>, msg: string, fields: Record<string, unknown>): string {
  const time = now().slice(11, 19)
  const tag = level === 'info' ? '' : `${level.toUpperCase()} `
  let rest = fields
  let head = msg
  if (msg === 'request') {
    const { method, path, status, duration_ms, request_id: _id, ...more } = rest
    head = `${method} ${path} ${status} ${Math.round(Number(duration_ms))}ms`
    rest = more
  } else if (msg === 'job') {
    const { kind, outcome, duration_ms, job_id: _id, attempt: _attempt, ...more } = rest
    head = `job ${kind} ${outcome} ${duration_ms}ms`
    rest = more
  }
  const pairs = Object.entries(rest)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}=${shown(v)}`)
    .join('')
  const stack = level === 'error' && rest.error instanceof Error && rest.error.stack ? `\n${rest.error.stack}` : ''
  return `${time} ${tag}${head}${pairs}${stack}\n`
}

export const log = {
  infoJson: (msg: string, fieldsJson: string) => {
    if (levels.info >= threshold) writeJson('info', msg, fieldsJson)
  },
  /** An info line of something routine (a periodic job's round): in the text format only at debug. */
  routine: (msg: string, fields?: Record<string, unknown>) => write(format === 'text' ? 'debug' : 'info', msg, fields),
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
}
