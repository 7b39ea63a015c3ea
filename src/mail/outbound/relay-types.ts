/** The contract of an outbound relay transport, shared by the SMTP and the local relay. */

export interface RelayEnvelope {
  /** MAIL FROM; '' for the null sender */
  from: string
  /** RCPT TO: to, cc and bcc together */
  to: string[]
  /** the sending organization (null: the service itself); the local relay files outbox rows under it */
  orgId?: string | null
}

export interface RelayResult {
  /** recipients the relay took */
  accepted: string[]
  /** recipients the relay refused while taking the others (a send where all are refused throws) */
  rejected: string[]
  /** the relay's final reply, e.g. `250 2.0.0 Ok: queued as ...` */
  response: string
  /** the reply to each refused recipient, where the relay gave one */
  refusals?: Refusal[]
}

/** A recipient the relay refused, with its reply (`550 5.1.1 <x@example.com>: user unknown`): a 5xx is a hard bounce. */
export interface Refusal {
  address: string
  reply: string
}

export type RelayErrorCode =
  | 'outbound_unreachable'
  | 'outbound_relay_timeout'
  | 'outbound_relay_failed'
  | 'outbound_response_malformed'
  | 'outbound_capacity_exhausted'
  | 'outbound_key_invalid'

/**
 * A send that did not go out, with the code of the error table. `maybeSent` is true when the
 * relay may have taken the message although we saw no acceptance (the connection failed after
 * the message data went out): retrying then risks a duplicate.
 */
export class RelayError extends Error {
  constructor(
    readonly code: RelayErrorCode,
    message: string,
    readonly maybeSent: boolean,
    /** the reply to each recipient, when the relay refused them all */
    readonly refusals: Refusal[] = [],
  ) {
    super(message)
    this.name = 'RelayError'
  }
}

export interface Relay {
  readonly kind: 'smtp' | 'local'
  send(envelope: RelayEnvelope, raw: string): Promise<RelayResult>
  close(): Promise<void>
}
