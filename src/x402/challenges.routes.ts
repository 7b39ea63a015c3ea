/**
 * POST /v1/x402/challenges (Idempotency-Key): written by hand for its replay. Reading and paying a
 * challenge are declared in operations.ts.
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { Ok } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import { x402Access } from './access'
import { createChallenge, presentChallenge, type ChallengeRow } from './challenges.service'
import { Challenge, NewChallengeBody } from './model'
import { rememberChallenge } from './pay.service'
import type { Sql, Tx } from '../db/client'

export function challengeRoutes(ctx: AppContext) {
  const interactionDomain = new URL(ctx.config.PUBLIC_URL).hostname
  const remembered = (c: ChallengeRow) => (rememberChallenge(ctx, c), c)
  return new Elysia({ prefix: '/v1/x402/challenges', tags: ['x402 payments'] }).use(x402Access(ctx)).post(
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
}
