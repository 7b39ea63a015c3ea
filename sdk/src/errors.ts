/**
 * Failures as one thrown class: the service's error envelope (`{success: false, error: {code,
 * message, details?, gates?}}`) with its HTTP status, typed by `code`, plus two codes of the
 * client's own for answers that never carried an envelope (the service unreachable, or
 * something else answering).
 */
import type { components } from './schema.ts'

/** Every code the service answers with (its closed list, from the OpenAPI document). */
export type ServiceErrorCode = components['schemas']['Error']['error']['code']
/** `network_error`: no answer (status 0); `invalid_response`: an answer that is not the service's envelope. */
export type ClientErrorCode = 'network_error' | 'invalid_response'
export type ErrorCode = ServiceErrorCode | ClientErrorCode

export class AgentMailError extends Error {
  override readonly name = 'AgentMailError'

  constructor(
    /** branch on this, never on the message */
    readonly code: ErrorCode,
    /** the HTTP status; 0 when no answer came */
    readonly status: number,
    message: string,
    /** machine-readable facts of the failure (`docs_url`, a limit, `interval` of slow_down...) */
    readonly details: Record<string, unknown> = {},
    /** the entitlement gates that refused the call, each with its message and docs_url */
    readonly gates: Record<string, unknown>[] = [],
    /** seconds to wait before retrying (the Retry-After header), when the service sent one */
    readonly retryAfter?: number,
    /** the response body as it came */
    readonly body?: unknown,
    options?: ErrorOptions,
  ) {
    super(message, options)
  }

  /** The error of a response that is not a success envelope. */
  static fromResponse(response: Response, body: unknown): AgentMailError {
    const retry = Number(response.headers.get('retry-after'))
    const retryAfter = Number.isFinite(retry) && retry >= 0 && response.headers.has('retry-after') ? retry : undefined
    const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown; gates?: unknown } } | null)?.error
    if (!error || typeof error.code !== 'string' || typeof error.message !== 'string') {
      return new AgentMailError(
        'invalid_response',
        response.status,
        `the service answered HTTP ${response.status} without its error envelope`,
        {},
        [],
        retryAfter,
        body,
      )
    }
    return new AgentMailError(
      error.code as ServiceErrorCode,
      response.status,
      error.message,
      (error.details as Record<string, unknown> | undefined) ?? {},
      (error.gates as Record<string, unknown>[] | undefined) ?? [],
      retryAfter,
      body,
    )
  }

  /** Where to read more: the details' docs_url, else the first gate's. */
  get docsUrl(): string | undefined {
    const url = this.details.docs_url ?? this.gates.find(g => typeof g.docs_url === 'string')?.docs_url
    return typeof url === 'string' ? url : undefined
  }
}

/** True when `error` is an AgentMailError with one of these codes (narrowing `code` to them). */
export function isAgentMailError<C extends ErrorCode>(error: unknown, ...codes: C[]): error is AgentMailError & { code: C } {
  return error instanceof AgentMailError && (codes.length === 0 || (codes as ErrorCode[]).includes(error.code))
}
