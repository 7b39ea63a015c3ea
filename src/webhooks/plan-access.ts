/**
 * What an organization's plan lets it configure for inbound delivery. Read from the database on
 * each write rather than from the cached credential, so an entitlement granted a moment ago (or a
 * plan change) applies at once.
 */
import type { Tx } from '../db/client'
import { errors } from '../errors'
import { entitlementsOf, planDefinition, type Entitlement, type Plan, type PlanLimits } from '../account/plans'

export interface PlanAccess {
  plan: Plan
  entitlements: Entitlement[]
  limits: PlanLimits
}

export async function planAccess(sql: Tx, orgId: string): Promise<PlanAccess> {
  const [org] = await sql<{ plan: Plan; extra_entitlements: string[] }[]>`select plan, extra_entitlements from orgs where id = ${orgId}`
  if (!org) throw errors.notFound('org')
  return { plan: org.plan, entitlements: entitlementsOf(org.plan, org.extra_entitlements), limits: planDefinition(org.plan).limits }
}

/** Throws 403 feature_disabled naming `entitlement` unless the organization has it. */
export function requireEntitlement(access: PlanAccess, entitlement: Entitlement, message: string) {
  if (!access.entitlements.includes(entitlement)) throw errors.featureDisabled(entitlement, message)
}

/**
 * Serializes the organization's endpoint and route writes for the rest of the transaction: the
 * plan limit is a count, and a count checked before an insert only holds while nobody else
 * inserts. An advisory lock, not `for update` on the org row, so inbound mail updating the
 * org's counters never waits for it.
 */
export async function lockOrgForWebhooks(tx: Tx, orgId: string) {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`webhooks:${orgId}`}, 0))`
}
