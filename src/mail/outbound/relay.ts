/**
 * The outbound relay of the process, chosen by configuration: SMTP_RELAY_URL set → the SMTP
 * relay; unset → local delivery (hosted recipients into the inbound pipeline, others into the
 * local outbox).
 */
import type { AppContext } from '../../context'
import { createLocalRelay } from './local-relay'
import type { Relay } from './relay-types'
import { createSmtpRelay, smtpRelayOptions } from './smtp-relay'

export { RelayError, type Refusal, type Relay, type RelayEnvelope, type RelayErrorCode, type RelayResult } from './relay-types'

export function createRelay(ctx: AppContext): Relay {
  return ctx.config.SMTP_RELAY_URL ? createSmtpRelay(smtpRelayOptions(ctx.config)) : createLocalRelay(ctx)
}
