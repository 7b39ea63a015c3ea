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
