/** Structured logging: one JSON object per line on stdout, filtered by LOG_LEVEL. */
const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const
export type LogLevel = keyof typeof levels

let threshold: number = levels.info

export function setLogLevel(level: LogLevel) {
  threshold = levels[level]
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
  process.stdout.write(`{"time":"${now()}","level":"${level}","msg":${JSON.stringify(msg)}${fieldsJson ? `,${fieldsJson}` : ''}}\n`)
}

export const log = {
  infoJson: (msg: string, fieldsJson: string) => {
    if (levels.info >= threshold) writeJson('info', msg, fieldsJson)
  },
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
}
