/**
 * The closed list of error codes of the v1 contract and their HTTP statuses. Domain code throws
 * `ApiError`s through the `errors` helpers; one `onError` (app.ts) renders the envelope.
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
  mx_conflict: 409,
  conflict: 409,
  precondition_failed: 412,
  quota_exceeded: 403,
  cursor_expired: 410,
  rate_limited: 429,
  rate_limit_exceeded: 429,
  outbound_capacity_exhausted: 503,
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

export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
    readonly gates?: Gate[],
  ) {
    super(message)
    this.status = ERROR_STATUS[code]
  }

  toBody() {
    return {
      success: false as const,
      error: {
        code: this.code,
        message: this.message,
        ...(this.details && { details: this.details }),
        ...(this.gates && { gates: this.gates }),
      },
    }
  }
}

export const errors = {
  /** A `field: reason` validation failure. */
  validation: (field: string, reason: string) => new ApiError('validation_error', `${field}: ${reason}`),
  notFound: (what: string) => new ApiError('not_found', `${what}: not found`),
  unauthorized: (message = 'authorization: missing or invalid bearer credential') => new ApiError('unauthorized', message),
  forbidden: (message: string) => new ApiError('forbidden', message),
  conflict: (message: string, details?: Record<string, unknown>) => new ApiError('conflict', message, details),
  featureDisabled: (entitlement: string, message: string) =>
    new ApiError('feature_disabled', message, { missing_entitlement: entitlement, message, docs_url: `/docs#entitlements` }),
}
