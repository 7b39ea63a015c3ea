/** POST /v1/x402/challenges (Idempotency-Key) and GET /v1/x402/challenges/{id} (the payee's). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { Ok } from '../http/envelope'
import { IdParams } from '../http/schema'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import { x402Access } from './access'
import { createChallenge, getOwnChallenge, presentChallenge, type ChallengeRow } from './challenges.service'
import { Challenge, NewChallengeBody, PaymentPayload, Receipt } from './model'
import { payChallenge, rememberChallenge } from './pay.service'
import type { Sql, Tx } from '../db/client'

export function challengeRoutes(ctx: AppContext) {
  const interactionDomain = new URL(ctx.config.PUBLIC_URL).hostname
  const remembered = (c: ChallengeRow) => (rememberChallenge(ctx, c), c)
  return new Elysia({ prefix: '/v1/x402/challenges', tags: ['x402 payments'] })
    .use(x402Access(ctx))
    .post(
      '/',
      async ({ auth, body, headers, set }) => {
        const key = idempotencyKeyOf(headers)
        // kept for its payment, which then needs no read of it (pay.service.ts)
        const create = async (sql: Sql | Tx) =>
          presentChallenge(remembered(await createChallenge(sql, auth.orgId, body, interactionDomain, { commitWithoutFlush: true })), ctx.config.PUBLIC_URL)
        // without a key the challenge is one statement: no transaction around it
        const outcome = key
          ? await idempotent(ctx.sql, ctx.keys, { scope: `org:${auth.orgId}:x402.challenges`, key, payload: body }, async tx => ({
              status: 201,
              data: await create(tx),
            }))
          : { status: 201, replayed: false, data: await create(ctx.sql) }
        return applyOutcome(set, key, outcome)
      },
      {
        body: NewChallengeBody,
        response: { 201: Ok(Challenge) },
        detail: {
          summary: 'Create a payment challenge',
          description:
            'Accepts Idempotency-Key (a retry returns the original challenge). `pay_to` is the default payout address of the network (422 no_payout_address without one), ' +
            "never an input; `asset` is the network's canonical USDC. The payer signs an EIP-3009 TransferWithAuthorization of exactly `amount` to `pay_to` with " +
            '`nonce` = `authorization_nonce` over the EIP-712 domain of `payment_requirements.extra`, then calls POST /v1/x402/challenges/{id}/pay.',
        },
      },
    )
    .get('/:id', async ({ auth, params }) => presentChallenge(await getOwnChallenge(ctx.sql, auth.orgId, params.id), ctx.config.PUBLIC_URL), {
      params: IdParams,
      response: { 200: Ok(Challenge) },
      detail: { summary: 'A challenge (the payee’s)', description: "Another organization's challenge is 404 not_found: its id lets a payer pay, not read." },
    })
    .post('/:id/pay', async ({ auth, params, body }) => payChallenge(ctx, { challengeId: params.id, payerOrg: auth.orgId, payment: body.payment }), {
      params: IdParams,
      // Any JSON is taken: a payload of the wrong shape is the spec's 422 malformed_payload, not a 400.
      body: t.Object({ payment: t.Union([PaymentPayload, t.Unknown()], { description: 'the x402 v1 payment payload' }) }),
      response: { 200: Ok(Receipt) },
      detail: {
        summary: 'Pay a challenge',
        description:
          'Called by the paying organization with its own credentials: its spend policy applies, and the challenge id lets it pay, not read. `payment` is the x402 v1 payload ' +
          '(`{x402Version: 1, scheme: "exact", network, payload: {signature, authorization: {from, to, value, validAfter, validBefore, nonce}}}`), built for example with the ' +
          "`x402` package: `preparePaymentHeader(from, 1, payment_requirements)`, set `payload.authorization.nonce` to the challenge's `authorization_nonce`, `signPaymentHeader`, and send the decoded header. " +
          "It is verified against the stored challenge only, then the token's authorizationState is read, the transfer simulated and sent; the receipt comes back synchronously. " +
          "A settled challenge returns the original receipt. Failures: 422 payment_verification_failed (details.reasons, several at once; payer_mismatch when the challenge is already claimed with another payer's authorization), 422 payment_declined (spend policy; the challenge stays pending), " +
          "422 settle_cap_exceeded (the payee's caps; the challenge fails, nothing moves on chain), 422 challenge_expired, 502 settlement_failed with reasons insufficient_funds (permanent), " +
          'authorization_already_used (permanent), facilitator_unavailable and settlement_failed (transient, Retry-After) or settlement_misconfigured (operator fault); ' +
          '409 conflict when another payment of the challenge or another challenge holds this authorization. Every failure carries details {reasons, failure_category}.',
      },
    })
}
