/**
 * Every /v1/x402 route needs the caller's organization to hold the `x402_payments` entitlement,
 * read from the database on each request so that `admin org entitle` applies at once.
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import type { Auth } from '../auth/principal'
import { authenticateRequest } from '../http/auth'
import { planAccess, requireEntitlement } from '../webhooks/plan-access'

export async function requireX402(ctx: AppContext, orgId: string) {
  requireEntitlement(await planAccess(ctx.sql, orgId), 'x402_payments', 'x402 payments need the x402_payments entitlement (power and platinum plans, or granted by the operator)')
}

/** `authenticated` plus the entitlement gate, before body and query validation. */
export function x402Access(ctx: AppContext) {
  return new Elysia().derive({ as: 'scoped' }, async ({ request, set, server }): Promise<{ auth: Auth }> => {
    const auth = await authenticateRequest(ctx, request, set, server)
    await requireX402(ctx, auth.orgId)
    return { auth }
  })
}
