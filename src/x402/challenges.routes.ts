/** POST /v1/x402/challenges (Idempotency-Key) and GET /v1/x402/challenges/{id} (the payee's). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { Ok } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import { x402Access } from './access'
import { createChallenge, getOwnChallenge, presentChallenge } from './challenges.service'
import { Challenge, NewChallengeBody } from './model'

export function challengeRoutes(ctx: AppContext) {
  const interactionDomain = new URL(ctx.config.PUBLIC_URL).hostname
  return new Elysia({ prefix: '/v1/x402/challenges', tags: ['x402 payments'] })
    .use(x402Access(ctx))
    .post(
      '/',
      async ({ auth, body, headers, set }) => {
        const key = idempotencyKeyOf(headers)
        const outcome = await idempotent(ctx.sql, ctx.keys, { scope: `org:${auth.orgId}:x402.challenges`, key, payload: body }, async tx => ({
          status: 201,
          data: presentChallenge(await createChallenge(tx, auth.orgId, body, interactionDomain)),
        }))
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
    .get('/:id', async ({ auth, params }) => presentChallenge(await getOwnChallenge(ctx.sql, auth.orgId, params.id)), {
      params: t.Object({ id: t.String({ format: 'uuid' }) }),
      response: { 200: Ok(Challenge) },
      detail: { summary: 'A challenge (the payee’s)', description: "Another organization's challenge is 404 not_found: its id lets a payer pay, not read." },
    })
}
