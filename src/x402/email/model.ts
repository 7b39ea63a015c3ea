/** Request and response schemas of the email-native x402 routes. */
import { t } from 'elysia'
import { Nullable, OneOf } from '../../http/schema'
import { Address } from '../../http/schema'
import { Challenge, NewChallengeBody } from '../model'

export const INTERACTION_STATES = ['awaiting_payment', 'verifying', '$completed', '$failed', '$expired'] as const

export const NewEmailChallengeBody = t.Composite([
  NewChallengeBody,
  t.Object({
    from: Address,
    to: Address,
    resource: t.Optional(t.String({ maxLength: 2048, pattern: '^[a-zA-Z][a-zA-Z0-9+.-]*:[^\\s]*$', description: 'URL identifier of what is paid for' })),
  }),
])

export const EmailChallenge = t.Object({
  interaction_id: t.String({ description: '<uuid>@<payee-domain>' }),
  challenge_id: t.String({ format: 'uuid' }),
  challenge: Challenge,
  send_id: Nullable(t.String({ format: 'uuid' }), { description: 'the sent challenge email' }),
})

export const InteractionStep = t.Object({
  step: t.String({ description: 'challenge, payment, receipt, reject or decline (unknown kinds received are recorded as such)' }),
  step_id: Nullable(t.String()),
  direction: OneOf(['sent', 'received'] as const),
  accepted: t.Boolean({ description: 'received steps: whether it was trusted and acted on; sent steps are always true' }),
  reasons: t.Array(t.String(), { description: 'why a received step was not acted on (identity_mismatch, dkim_required, ...)' }),
  email_id: Nullable(t.String({ format: 'uuid' })),
  body: t.Unknown({ description: 'the interaction.json as sent or received' }),
  created_at: t.String({ format: 'date-time' }),
})

export const Interaction = t.Object({
  interaction_id: t.String(),
  state: OneOf(INTERACTION_STATES, {
    description:
      'awaiting_payment: the payer owes a payment or a decline; verifying: a trusted payment step arrived and the service owes a receipt or a reject; ' +
      '$completed (settled or declined), $failed (rejected), $expired: terminal',
  }),
  outcome: Nullable(OneOf(['settled', 'declined', 'rejected', 'expired'] as const)),
  challenge_id: t.String({ format: 'uuid' }),
  payee_address: t.String(),
  payer_address: t.String(),
  payer_domain: t.String(),
  payer_org: Nullable(t.String({ format: 'uuid' })),
  expires_at: t.String({ format: 'date-time' }),
  settlement: Nullable(
    t.Object({ settle_tx: t.String(), status: t.Literal('settled'), network: t.String(), amount: t.String(), asset: t.String(), pay_to: t.String() }),
  ),
  failure_reason: Nullable(t.String()),
  reasons: Nullable(t.Array(t.String())),
  thread_id: Nullable(t.String({ format: 'uuid' })),
  steps: t.Array(InteractionStep),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})
