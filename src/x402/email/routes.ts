/** POST /v1/x402/email-challenges and GET /v1/x402/interactions/{id} (gated on x402_payments and interactions_enabled). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../../context'
import { Ok } from '../../http/envelope'
import { applyOutcome, idempotencyKeyOf } from '../../http/idempotency'
import { planAccess, requireEntitlement } from '../../account/access'
import { x402Access } from '../access'
import { EmailChallenge, Interaction, NewEmailChallengeBody } from './model'
import { createEmailChallenge, getInteraction } from './service'

export function emailX402Routes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/x402', tags: ['x402 payments'] })
    .use(x402Access(ctx))
    .onBeforeHandle(async ({ auth }) => {
      requireEntitlement(await planAccess(ctx.sql, auth.orgId), 'interactions_enabled', 'email-native x402 needs the interactions_enabled entitlement')
    })
    .post(
      '/email-challenges',
      async ({ auth, body, headers, set }) => {
        const r = await createEmailChallenge(ctx, auth, body, idempotencyKeyOf(headers))
        return applyOutcome(set, r.key, { status: 201, data: r.data, replayed: r.replayed })
      },
      {
        body: NewEmailChallengeBody,
        response: { 201: Ok(EmailChallenge) },
        detail: {
          summary: 'Send a payment challenge by email',
          description:
            '`from` must be a sender of the organization (as on a send); `to` is the payer, pinned with its domain. Sends a DKIM-signed message with a text part and an ' +
            '`interaction.json` part (the `challenge` step: payment_requirements, challenge_nonce, authorization_nonce). The payer signs an EIP-3009 authorization with ' +
            'nonce = authorization_nonce and replies to the challenge message (In-Reply-To or References naming it; else not_in_thread) with a `payment` step, or a `decline`. ' +
            'Only a reply with a passing DKIM signature covering From and Content-Type (and no l= body length tag), by the payer domain or a true subdomain of it, from the ' +
            'pinned address, can pay or decline; others are recorded and answered with at most one `reject` notice (identity_mismatch, dkim_required). ' +
            'Idempotency-Key: a retry returns the original without a second send; a concurrent duplicate gets 409 conflict.',
        },
      },
    )
    .get('/interactions/:id', async ({ auth, params }) => getInteraction(ctx, auth.orgId, params.id), {
      params: t.Object({
        id: t.String({
          maxLength: 300,
          pattern: '^[0-9a-fA-F-]{36}@[A-Za-z0-9.-]+$',
          error: 'must be an interaction_id (<uuid>@<domain>)',
          description: 'the interaction_id, <uuid>@<payee-domain> (URL-encode the @ if your client needs to)',
        }),
      }),
      response: { 200: Ok(Interaction) },
      detail: {
        summary: 'An email-native x402 interaction',
        description:
          'State, every step sent and received (with why a received one was not acted on), and the settlement once settled. awaiting_payment: the payer owes a payment ' +
          'or a decline; verifying: a trusted payment arrived and the service owes a receipt or a reject. Terminal: $completed (outcome settled or declined), $failed ' +
          "(rejected, with reasons), $expired. Another organization's interaction is 404 not_found.",
      },
    })
}
