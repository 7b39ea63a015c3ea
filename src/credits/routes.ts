/** Credit redemption and balance (owner or admin of the person behind the credential). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { requireOwnerOrAdmin } from '../account/roles'
import { authenticated } from '../http/auth'
import { Ok } from '../http/envelope'
import { applyOutcome, idempotencyKeyOf, idempotent } from '../http/idempotency'
import { creditBalance, redeemCreditCode } from './service'
import { Balance } from './model'

export function creditRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/credits', tags: ['Credits'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth }) => {
        await requireOwnerOrAdmin(ctx.sql, auth, 'credits')
        return creditBalance(ctx.sql, auth.orgId)
      },
      { response: { 200: Ok(Balance) }, detail: { summary: 'Credit balance' } },
    )
    .post(
      '/redeem',
      async ({ auth, body, headers, set }) => {
        await requireOwnerOrAdmin(ctx.sql, auth, 'credits.redeem')
        const key = idempotencyKeyOf(headers)
        const outcome = await idempotent(ctx.sql, ctx.keys, { scope: `org:${auth.orgId}:credits.redeem`, key, payload: body }, async tx => ({
          status: 200,
          data: await redeemCreditCode(tx, auth.orgId, body.code),
        }))
        return applyOutcome(set, key, outcome)
      },
      {
        body: t.Object({ code: t.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: Ok(t.Composite([Balance, t.Object({ redeemed_cents: t.Integer() })])) },
        detail: { summary: 'Redeem a credit code', description: 'Accepts Idempotency-Key. An unknown or used code is 404 not_found.' },
      },
    )
}
