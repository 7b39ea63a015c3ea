/**
 * The closed list of error codes of the v1 contract and their HTTP statuses, holding only codes
 * that something throws (a test checks it). Every error is made here: `new ApiError(code,
 * message, details?)` for a plain one, the `errors` factories for the ones that carry headers
 * or gates (a 429 without Retry-After cannot be written); one `onError` (app.ts) renders the
 * envelope, and `toBody` makes every docs_url absolute the same way.
 */
export const ERROR_STATUS = {
  unauthorized: 401,
  download_token_expired: 401,
  download_token_invalid: 401,
  forbidden: 403,
  not_found: 404,
  validation_error: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  method_not_allowed: 405,
  mx_conflict: 409,
  conflict: 409,
  precondition_failed: 412,
  cursor_expired: 410,
  quota_exceeded: 403,
  rate_limited: 429,
  rate_limit_exceeded: 429,
  outbound_capacity_exhausted: 503,
  database_unavailable: 503,
  outbound_unreachable: 502,
  outbound_relay_timeout: 504,
  outbound_relay_failed: 502,
  outbound_response_malformed: 502,
  outbound_key_invalid: 500,
  internal_error: 500,
  recipient_not_allowed: 403,
  cannot_send_from_domain: 403,
  inbound_not_repliable: 422,
  not_scheduled: 409,
  discard_not_enabled: 403,
  search_timeout: 504,
  feature_disabled: 403,
  no_payout_address: 422,
  payment_declined: 422,
  payment_verification_failed: 422,
  settlement_failed: 502,
  challenge_expired: 422,
  settle_cap_exceeded: 422,
  authorization_pending: 400,
  slow_down: 400,
  expired_token: 400,
  invalid_device_code: 400,
  access_denied: 403,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export interface Gate {
  name: string
  reason: string
  message: string
  subject: string
  fix?: { action: string; subject: string }
  docs_url: string
}

/** Codes that always come with Retry-After: only `errors.retryLater` makes them. */
type RetryCode = 'rate_limited' | 'rate_limit_exceeded' | 'slow_down' | 'database_unavailable'
/** Codes that `new ApiError` makes. */
export type PlainCode = Exclude<ErrorCode, RetryCode>

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly status: number
  /** response headers the error needs (Retry-After, WWW-Authenticate, Allow, ratelimit-*) */
  readonly headers: Record<string, string> = {}
  gates?: Gate[]

  constructor(
    code: PlainCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message)
    this.code = code
    this.status = ERROR_STATUS[code]
  }

  /** The envelope; a docs_url given as a path (`/docs#...`) becomes a URL of `siteUrl`. */
  toBody(siteUrl = '') {
    const absolute = <T extends { docs_url?: unknown }>(o: T): T =>
      typeof o.docs_url === 'string' && o.docs_url.startsWith('/') ? { ...o, docs_url: `${siteUrl}${o.docs_url}` } : o
    return {
      success: false as const,
      error: {
        code: this.code,
        message: this.message,
        ...(this.details && { details: absolute(this.details) }),
        ...(this.gates && { gates: this.gates.map(absolute) }),
      },
    }
  }
}

/** Where the human API reference lives; `anchor` names a section of it. */
export function docsPath(anchor?: string): string {
  return anchor ? `/docs#${anchor}` : '/docs'
}

function withHeaders(error: ApiError, headers: Record<string, string>): ApiError {
  Object.assign(error.headers, headers)
  return error
}

export const errors = {
  /** A `field: reason` validation failure; `details` for a machine-readable reason. */
  validation: (field: string, reason: string, details?: Record<string, unknown>) => new ApiError('validation_error', `${field}: ${reason}`, details),
  notFound: (what: string) => new ApiError('not_found', `${what}: not found`),
  /** 401; `challenge` is the WWW-Authenticate value telling the client where to get a credential. */
  unauthorized: (message = 'authorization: missing or invalid bearer credential', challenge?: string) =>
    withHeaders(new ApiError('unauthorized', message), challenge ? { 'www-authenticate': challenge } : {}),
  forbidden: (message: string) => new ApiError('forbidden', message),
  conflict: (message: string, details?: Record<string, unknown>) => new ApiError('conflict', message, details),
  featureDisabled: (entitlement: string, message: string) =>
    new ApiError('feature_disabled', message, { missing_entitlement: entitlement, message, docs_url: docsPath('entitlements') }),
  /** 403 recipient_not_allowed with one gate per refused recipient. */
  recipientsRefused: (message: string, gates: Gate[]) => Object.assign(new ApiError('recipient_not_allowed', message), { gates }),
  /** 502 settlement_failed (x402); a transient failure carries Retry-After. */
  settlementFailed: (message: string, details: Record<string, unknown>, retryAfterSeconds?: number) =>
    withHeaders(new ApiError('settlement_failed', message, details), retryAfterSeconds ? { 'retry-after': String(retryAfterSeconds) } : {}),
  /** 405 for a path that exists with other methods, listing them in Allow. */
  methodNotAllowed: (method: string, path: string, allow: string[]) =>
    withHeaders(new ApiError('method_not_allowed', `${method} ${path}: method not allowed; allowed: ${allow.join(', ')}`), { allow: allow.join(', ') }),
  /**
   * The one way to say "not now": the message ends with the same number of seconds that
   * Retry-After carries. `headers` adds what the limiter knows (ratelimit-*).
   */
  retryLater: (
    code: RetryCode,
    message: string,
    retryAfterSeconds: number,
    opts: { details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) => {
    const seconds = Math.max(1, Math.ceil(retryAfterSeconds))
    // the constructor refuses these codes so that nothing else can make one without Retry-After
    const error = new ApiError(code as never, `${message}; retry after ${seconds} second${seconds === 1 ? '' : 's'}`, opts.details)
    return withHeaders(error, { ...opts.headers, 'retry-after': String(seconds) })
  },
}
