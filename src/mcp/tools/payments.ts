/**
 * The x402 payment tool written by hand still (the others are declared in x402/operations.ts),
 * behind the same x402_payments entitlement: creating a challenge, with its required
 * idempotency_key (REST takes an optional Idempotency-Key header and replays).
 */
import { Type } from '@sinclair/typebox'
import { idempotent } from '../../http/idempotency'
import { requireX402 } from '../../x402/access'
import { createChallenge, presentChallenge } from '../../x402/challenges.service'
import { Challenge, NewChallengeBody } from '../../x402/model'
import { tool, WRITE } from '../tool'

const _Instant = (description: string) => Type.Optional(Type.String({ description: `ISO 8601 instant with Z or an offset; ${description}` }))

export const paymentTools = [
  tool({
    name: 'create_payment_challenge',
    title: 'Create a payment challenge',
    description:
      'Asks for a USDC payment (x402): returns the payment requirements a payer signs an EIP-3009 authorization against. ' +
      'amount is in base units (USDC has 6 decimals: 10000 = 0.01 USDC). Needs the x402_payments entitlement and a payout address for the network.',
    input: Type.Object({
      ...NewChallengeBody.properties,
      idempotency_key: Type.String({ minLength: 1, maxLength: 255, description: 'required: a retry with the same key returns the first challenge' }),
    }),
    output: Challenge,
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'POST', path: '/v1/x402/challenges' },
    handle: async ({ ctx, auth }, { idempotency_key, ...body }) => {
      await requireX402(ctx, auth.orgId)
      const interactionDomain = new URL(ctx.config.PUBLIC_URL).hostname
      const outcome = await idempotent(ctx.sql, ctx.keys, { scope: `org:${auth.orgId}:x402.challenges`, key: idempotency_key, payload: body }, async tx => ({
        status: 201,
        data: presentChallenge(await createChallenge(tx, auth.orgId, body, interactionDomain, { commitWithoutFlush: true }), ctx.config.PUBLIC_URL),
      }))
      return outcome.data
    },
  }),
]
