/**
 * Sender filters: whitelist and blocklist patterns (the language of patterns.ts) matched against
 * the sender of inbound mail, org-wide or for one domain of the organization. Per-domain filters
 * need the filters_per_domain entitlement. Only `enabled` changes after creation.
 */
import type { Sql } from '../db/client'
import { getDomain } from '../domains/service'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { normalizePattern, patternProblem } from './patterns'
import { planAccess, requireEntitlement } from '../account/access'
import { deleteFilterById, filterById, type FilterRow, type FilterType, filtersPage, insertFilter, updateFilterEnabled } from './filter-queries'

export function presentFilter(row: FilterRow) {
  return { id: row.id, type: row.type, pattern: row.pattern, domain_id: row.domain_id, enabled: row.enabled, created_at: iso(row.created_at)! }
}

export async function createFilter(sql: Sql, orgId: string, input: { type: FilterType; pattern: string; domain_id?: string | null }): Promise<FilterRow> {
  const pattern = normalizePattern(input.pattern)
  const problem = patternProblem(pattern)
  if (problem) throw errors.validation('pattern', problem)
  const domainId = input.domain_id?.toLowerCase() ?? null
  if (domainId) {
    const access = await planAccess(sql, orgId)
    requireEntitlement(
      access,
      'filters_per_domain',
      `domain_id: per-domain filters are not included in the ${access.plan} plan (entitlement filters_per_domain); omit domain_id for an org-wide filter, or upgrade`,
    )
    await getDomain(sql, orgId, domainId)
  }
  return insertFilter(sql, orgId, input.type, pattern, domainId)
}

export async function listFilters(sql: Sql, orgId: string, page: PageRequest) {
  return filtersPage(sql, orgId, page)
}

export async function getFilter(sql: Sql, orgId: string, id: string): Promise<FilterRow> {
  const row = await filterById(sql, orgId, id)
  if (!row) throw errors.notFound('filter')
  return row
}

export async function setFilterEnabled(sql: Sql, orgId: string, id: string, enabled: boolean): Promise<FilterRow> {
  const row = await updateFilterEnabled(sql, orgId, id, enabled)
  if (!row) throw errors.notFound('filter')
  return row
}

export async function deleteFilter(sql: Sql, orgId: string, id: string): Promise<{ id: string }> {
  const row = await deleteFilterById(sql, orgId, id)
  if (!row) throw errors.notFound('filter')
  return row
}
