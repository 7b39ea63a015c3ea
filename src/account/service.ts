/** The account reads: plan, entitlements, limits and storage usage of an organization. */
import type { Sql } from '../db/client'
import { errors } from '../errors'
import { orgById, type OrgRow } from './org-queries'
import { entitlementsOf, MEMORY_VALUE_MAX_BYTES, planDefinition, WAKE_MIN_INTERVAL_MINUTES } from './plans'

async function loadOrg(sql: Sql, orgId: string): Promise<OrgRow> {
  const org = await orgById(sql, orgId)
  if (!org) throw errors.notFound('org')
  return org
}

export async function getAccount(sql: Sql, orgId: string) {
  const org = await loadOrg(sql, orgId)
  const entitlements = entitlementsOf(org.plan, org.extra_entitlements)
  const { limits } = planDefinition(org.plan)
  return {
    plan: org.plan,
    entitlements,
    limits: {
      storage_mb: limits.storage_mb,
      send_per_hour: org.send_per_hour_override ?? limits.send_per_hour,
      send_per_day: org.send_per_day_override ?? limits.send_per_day,
      api_per_minute: org.api_per_minute_override ?? limits.api_per_minute,
      webhooks_max_global: limits.webhooks_max_global,
      webhooks_per_domain: entitlements.includes('webhooks_per_domain'),
      filters_per_domain: entitlements.includes('filters_per_domain'),
      spam_thresholds_per_domain: entitlements.includes('spam_thresholds_per_domain'),
      memory_keys_max: limits.memory_keys_max,
      memory_storage_mb: limits.memory_storage_mb,
      memory_value_max_kb: MEMORY_VALUE_MAX_BYTES / 1024,
      wakes_active_max: limits.wakes_active_max,
      wake_min_interval_minutes: WAKE_MIN_INTERVAL_MINUTES,
    },
  }
}

const MB = 1024 * 1024
const round2 = (n: number) => Math.round(n * 100) / 100

export async function getStorage(sql: Sql, orgId: string) {
  const org = await loadOrg(sql, orgId)
  const { limits } = planDefinition(org.plan)
  const used = Number(org.storage_used_bytes)
  const usedMb = used / MB
  return {
    used_bytes: used,
    used_kb: round2(used / 1024),
    used_mb: round2(usedMb),
    included_mb: limits.storage_mb,
    limit_mb: limits.storage_limit_mb,
    overage_mb: round2(Math.max(0, usedMb - limits.storage_mb)),
    quota_mb: limits.storage_mb,
    percentage: round2((usedMb / limits.storage_mb) * 100),
    emails_count: org.emails_count,
  }
}
