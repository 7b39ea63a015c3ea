/**
 * The PostgreSQL errors we act on, by SQLSTATE (postgres.js puts it in `code`, and the name of
 * the violated constraint in `constraint_name`). Compare codes here, not inline.
 */
const UNIQUE_VIOLATION = '23505'
const QUERY_CANCELED = '57014'

interface PostgresError {
  code?: string
  constraint_name?: string
}

/** A duplicate key; with `constraint`, only a violation of that unique constraint or index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as PostgresError | undefined
  return e?.code === UNIQUE_VIOLATION && (constraint === undefined || e.constraint_name === constraint)
}

/** A statement cancelled, by `statement_timeout` or a cancel request. */
export function isQueryCanceled(error: unknown): boolean {
  return (error as PostgresError | undefined)?.code === QUERY_CANCELED
}

/** Connection-level codes: postgres.js's own, the socket's, and SQLSTATE classes 08 and 57P. */
const CONNECTION_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ConnectionRefused',
  'ConnectionClosed',
])

/**
 * The database could not be reached or dropped the connection (down, restarting, terminated,
 * out of connections): a condition that passes, unlike an error in the statement.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const code = (error as PostgresError | undefined)?.code
  if (typeof code !== 'string') return false
  return CONNECTION_CODES.has(code) || code.startsWith('08') || code.startsWith('57P') || code === '53300'
}
