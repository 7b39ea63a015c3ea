/**
 * What an organization's plan lets it do: its plan, entitlements (the plan's and those granted by
 * an operator) and limits. Read from the database on each write rather than from the cached
 * credential, so an entitlement granted a moment ago (or a plan change) applies at once.
 */
import type { Tx } from '../db/client'
import { errors } from '../errors'
import { orgPlanAndEntitlements } from './org-queries'
import { entitlementsOf, planDefinition, type Entitlement, type Plan, type PlanLimits } from './plans'

export interface PlanAccess {
  plan: Plan
  entitlements: Entitlement[]
  limits: PlanLimits
}

export async function planAccess(sql: Tx, orgId: string): Promise<PlanAccess> {
  const org = await orgPlanAndEntitlements(sql, orgId)
  if (!org) throw errors.notFound('org')
  return { plan: org.plan, entitlements: entitlementsOf(org.plan, org.extra_entitlements), limits: planDefinition(org.plan).limits }
}

/** Throws 403 feature_disabled naming `entitlement` unless the organization has it. */
export function requireEntitlement(access: PlanAccess, entitlement: Entitlement, message: string) {
  if (!access.entitlements.includes(entitlement)) throw errors.featureDisabled(entitlement, message)
}
