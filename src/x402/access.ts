/**
 * Every /v1/x402 route needs the caller's organization to hold the `x402_payments` entitlement.
 * An organization without it is read from the database on each request, so that `admin org
 * entitle` applies at once; one seen with it is remembered for CACHE_TTL_MS at most: a plan change
 * (account/org-queries.ts) is announced to every listening process, which forgets it at once.
 */
import { Elysia } from 'elysia'
import { LRUCache } from 'lru-cache'
import { perProcess, type AppContext } from '../context'
import type { Auth } from '../auth/principal'
import { CACHE_TTL_MS } from '../auth/credentials'
import { authenticateRequest } from '../http/auth'
import { planAccess, requireEntitlement } from '../account/access'
import { mailEvents } from '../events'

/** Organizations seen with the entitlement; one whose plan or entitlements change is forgotten at once in every listening process. */
const entitled = perProcess(ctx => {
  const cache = new LRUCache<string, true>({ max: 10_000, ttl: CACHE_TTL_MS })
  mailEvents(ctx).onOrgChanged(orgId => cache.delete(orgId))
  return cache
})

export async function requireX402(ctx: AppContext, orgId: string) {
  if (entitled(ctx).has(orgId)) return
  requireEntitlement(
    await planAccess(ctx.sql, orgId),
    'x402_payments',
    'x402 payments need the x402_payments entitlement (power and platinum plans, or granted by the operator)',
  )
  entitled(ctx).set(orgId, true)
}

/** `authenticated` plus the entitlement gate, before body and query validation. */
export function x402Access(ctx: AppContext) {
  return new Elysia().derive({ as: 'scoped' }, async ({ request, set, server }): Promise<{ auth: Auth }> => {
    const auth = await authenticateRequest(ctx, request, set, server)
    await requireX402(ctx, auth.orgId)
    return { auth }
  })
}
