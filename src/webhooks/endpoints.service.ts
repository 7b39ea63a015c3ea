/**
 * Webhook endpoints: where inbound mail is delivered, an HTTP receiver or a hosted function.
 *
 * Slots: each domain of the organization has one slot for its default endpoint, and the
 * organization has one fallback slot (domain_id null). An enabled, active, non-route-target
 * endpoint occupies its slot; a second one is 409 conflict naming the occupant. The partial
 * unique index endpoints_slot_key is the final word; the check before it only finds the
 * occupant's id for the error. Route targets occupy no slot: only recipient routes reach them.
 *
 * DELETE deactivates: the row stays for the delivery history (and replays' endpoint_url), the
 * slot is freed, and the routes pointing at it are removed with it.
 */
import type { Config } from '../config'
import type { Sql, Tx } from '../db/client'
import { transaction } from '../db/transaction'
import type { Resolver } from '../dns/resolver'
import { getDomain } from '../domains/service'
import { errors } from '../errors'
import type { PageRequest } from '../http/pagination'
import { iso } from '../http/timestamps'
import { isUniqueViolation } from '../db/errors'
import { planAccess, requireEntitlement, type PlanAccess } from '../account/access'
import { checkWebhookUrl } from '../egress/url-safety'
import {
  activeEndpointsPage,
  countActiveEndpoints,
  type EndpointRow,
  type EndpointRules,
  endpointById,
  functionEndpoint,
  insertEndpoint,
  lockOrgForWebhooks,
  markEndpointDeactivated,
  type NewEndpointRow,
  slotOccupant,
  updateEndpointFields,
} from './endpoint-queries'
import { deleteRoutesOfEndpoint } from './route-queries'

/** Read by GraphQL's loaders and by functions/ (a function's endpoint). */

/** What the endpoint service needs from the application context. */
export interface EndpointDeps {
  config: Pick<Config, 'WEBHOOK_ALLOW_LOOPBACK'>
  resolver: Resolver
}

export interface NewEndpoint {
  kind?: 'http' | 'function'
  url?: string
  function_id?: string
  enabled?: boolean
  domain_id?: string | null
  is_route_target?: boolean
  rules?: EndpointRules
}

export interface EndpointPatch {
  url?: string
  enabled?: boolean
  domain_id?: string | null
  rules?: EndpointRules
}

/** The scheme of a function endpoint's URL: function://<function_id>. */
export const FUNCTION_URL_PREFIX = 'function://'

/** The URL a delivery records: the receiver's, or the opaque function://<id> of a function. */
export function endpointUrl(row: Pick<EndpointRow, 'kind' | 'url' | 'function_id'>): string {
  return row.kind === 'function' ? `${FUNCTION_URL_PREFIX}${row.function_id}` : row.url!
}

export function presentEndpoint(row: EndpointRow) {
  return {
    id: row.id,
    kind: row.kind,
    url: endpointUrl(row),
    function_id: row.function_id,
    enabled: row.enabled,
    domain_id: row.domain_id,
    is_route_target: row.is_route_target,
    rules: row.rules,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  }
}

const dedupe = <T>(values: T[]) => [...new Set(values)]

/** Rules as stored: sender addresses lowercased, duplicates dropped, keys in a stable order. */
export function normalizeRules(rules: EndpointRules): EndpointRules {
  const out: EndpointRules = {}
  if (rules.max_size_bytes !== undefined) out.max_size_bytes = rules.max_size_bytes
  if (rules.exclude_attachments !== undefined) out.exclude_attachments = rules.exclude_attachments
  if (rules.attachment_limit_mb !== undefined) out.attachment_limit_mb = rules.attachment_limit_mb
  if (rules.sender_whitelist) out.sender_whitelist = dedupe(rules.sender_whitelist.map(a => a.trim().toLowerCase()))
  if (rules.sender_blacklist) out.sender_blacklist = dedupe(rules.sender_blacklist.map(a => a.trim().toLowerCase()))
  if (rules.event_types) {
    if (!rules.event_types.length) throw errors.validation('rules.event_types', 'must not be empty')
    out.event_types = dedupe(rules.event_types)
  }
  return out
}

/** One endpoint of the organization, or null; deactivated ones only with `includeDeactivated`. */
export async function findEndpoint(sql: Tx, orgId: string, id: string, opts: { includeDeactivated?: boolean } = {}): Promise<EndpointRow | null> {
  const row = await endpointById(sql, orgId, id, opts.includeDeactivated)
  return row ?? null
}

/** One active endpoint of the organization; deactivated and other organizations' are not_found. */
export async function getEndpoint(sql: Tx, orgId: string, id: string): Promise<EndpointRow> {
  const row = await findEndpoint(sql, orgId, id)
  if (!row) throw errors.notFound('endpoint')
  return row
}

export async function listEndpoints(sql: Sql, orgId: string, page: PageRequest) {
  return activeEndpointsPage(sql, orgId, page)
}

function slotTaken(domainId: string | null, occupant: string | null) {
  const slot = domainId === null ? 'the org-wide fallback slot (domain_id null)' : `the default slot of domain ${domainId}`
  return errors.conflict(
    `domain_id: ${slot} is held by enabled endpoint ${occupant ?? '(another endpoint)'}; disable or delete it first, or make this endpoint a route target`,
    { conflicting_endpoint_id: occupant, domain_id: domainId },
  )
}

async function assertSlotFree(tx: Tx, orgId: string, domainId: string | null, except: string | null) {
  const occupant = await slotOccupant(tx, orgId, domainId, except)
  if (occupant) throw slotTaken(domainId, occupant)
}

/** A unique violation of the slot index (a race the check did not see) as the contract's 409. */
async function mapSlotViolation<T>(sql: Tx, orgId: string, domainId: string | null, except: string | null, write: () => Promise<T>): Promise<T> {
  try {
    return await write()
  } catch (error) {
    if (isUniqueViolation(error, 'endpoints_slot_key')) throw slotTaken(domainId, await slotOccupant(sql, orgId, domainId, except))
    throw error
  }
}

/** A per-domain endpoint needs the entitlement, and the domain must be the organization's. */
async function checkDomain(sql: Tx, access: PlanAccess, orgId: string, domainId: string) {
  requireEntitlement(
    access,
    'webhooks_per_domain',
    `domain_id: per-domain endpoints are not included in the ${access.plan} plan (entitlement webhooks_per_domain); omit domain_id for the org-wide endpoint, or upgrade`,
  )
  await getDomain(sql, orgId, domainId)
}

/** Refuses a new active endpoint beyond the plan's webhooks_max_global (every active endpoint counts, disabled and route targets too). */
async function assertUnderPlanLimit(tx: Tx, access: PlanAccess, orgId: string) {
  const max = access.limits.webhooks_max_global
  if (max === null) return
  if ((await countActiveEndpoints(tx, orgId)) >= max) {
    throw errors.featureDisabled(
      'webhooks_max_global',
      `endpoints: the ${access.plan} plan allows ${max} active endpoint${max === 1 ? '' : 's'} (webhooks_max_global); delete one (DELETE /v1/endpoints/{id}) or upgrade`,
    )
  }
}

/** Inserts under the org's webhook lock, after the plan limit and the slot rule. */
async function insertChecked(tx: Tx, access: PlanAccess, orgId: string, e: NewEndpointRow): Promise<EndpointRow> {
  await assertUnderPlanLimit(tx, access, orgId)
  if (e.enabled && !e.isRouteTarget) await assertSlotFree(tx, orgId, e.domainId, null)
  return insertEndpoint(tx, orgId, e)
}

/**
 * Creates an endpoint. A function has at most one endpoint: asking again for the same function
 * returns the existing one, unchanged, with `created: false`.
 */
export async function createEndpoint(sql: Tx, deps: EndpointDeps, orgId: string, input: NewEndpoint): Promise<{ row: EndpointRow; created: boolean }> {
  const kind = input.kind ?? 'http'
  if (kind === 'http') {
    if (input.function_id !== undefined) throw errors.validation('function_id', 'must not be set for an http endpoint')
    if (input.url === undefined) throw errors.validation('url', 'is required for an http endpoint')
  } else {
    if (input.url !== undefined) throw errors.validation('url', 'must not be set for a function endpoint')
    if (input.function_id === undefined) throw errors.validation('function_id', 'is required for a function endpoint')
  }
  const rules = normalizeRules(input.rules ?? {})
  const functionId = input.function_id?.toLowerCase() ?? null
  if (functionId) {
    const existing = await functionEndpoint(sql, orgId, functionId)
    if (existing) return { row: existing, created: false }
  }
  const access = await planAccess(sql, orgId)
  const domainId = input.domain_id?.toLowerCase() ?? null
  if (domainId) await checkDomain(sql, access, orgId, domainId)
  const url = input.url === undefined ? null : (await checkWebhookUrl(input.url, deps.resolver, deps.config.WEBHOOK_ALLOW_LOOPBACK)).url.href
  const fields: NewEndpointRow = { kind, url, functionId, enabled: input.enabled ?? true, domainId, isRouteTarget: input.is_route_target ?? false, rules }
  return mapSlotViolation(sql, orgId, domainId, null, () =>
    transaction(sql, async tx => {
      await lockOrgForWebhooks(tx, orgId)
      if (functionId) {
        // another request for the same function got here first
        const existing = await functionEndpoint(tx, orgId, functionId)
        if (existing) return { row: existing, created: false }
      }
      return { row: await insertChecked(tx, access, orgId, fields), created: true }
    }),
  )
}

/**
 * The route-target endpoint of a function, minted when it has none (a route pointed at a
 * function_id). A function whose one endpoint is a domain default or the fallback cannot also
 * be a route target: 409.
 */
export async function functionRouteTarget(tx: Tx, access: PlanAccess, orgId: string, functionId: string): Promise<EndpointRow> {
  const existing = await functionEndpoint(tx, orgId, functionId)
  if (existing) {
    if (existing.is_route_target) return existing
    throw errors.conflict(
      `function_id: function ${functionId} already has endpoint ${existing.id}, which is not a route target; delete it first, or route to an endpoint_id`,
      { conflicting_endpoint_id: existing.id },
    )
  }
  return insertChecked(tx, access, orgId, { kind: 'function', url: null, functionId, enabled: true, domainId: null, isRouteTarget: true, rules: {} })
}

/** Changes url, enabled, domain_id and rules (replaced whole); re-enabling or moving into a held slot is 409. */
export async function updateEndpoint(sql: Sql, deps: EndpointDeps, orgId: string, id: string, patch: EndpointPatch): Promise<EndpointRow> {
  if (!Object.keys(patch).length) throw errors.validation('body', 'must set at least one of url, enabled, domain_id, rules')
  const current = await getEndpoint(sql, orgId, id)
  if (patch.url !== undefined && current.kind === 'function') throw errors.validation('url', 'must not be set for a function endpoint')
  const rules = patch.rules === undefined ? undefined : normalizeRules(patch.rules)
  const domainId = patch.domain_id === undefined ? current.domain_id : (patch.domain_id?.toLowerCase() ?? null)
  if (domainId && domainId !== current.domain_id) await checkDomain(sql, await planAccess(sql, orgId), orgId, domainId)
  const url = patch.url === undefined ? undefined : (await checkWebhookUrl(patch.url, deps.resolver, deps.config.WEBHOOK_ALLOW_LOOPBACK)).url.href
  return mapSlotViolation(sql, orgId, domainId, id, () =>
    sql.begin(async tx => {
      await lockOrgForWebhooks(tx, orgId)
      const row = await getEndpoint(tx, orgId, id)
      const enabled = patch.enabled ?? row.enabled
      if (enabled && !row.is_route_target) await assertSlotFree(tx, orgId, domainId, id)
      return updateEndpointFields(tx, orgId, id, { url: url ?? row.url, enabled, domainId, rules: rules ?? row.rules })
    }),
  )
}

/** Deactivates the endpoint: it stops receiving mail, frees its slot, and the routes to it are removed. */
export async function deactivateEndpoint(sql: Sql, orgId: string, id: string): Promise<EndpointRow> {
  return sql.begin(async tx => {
    await lockOrgForWebhooks(tx, orgId)
    const row = await markEndpointDeactivated(tx, orgId, id)
    if (!row) throw errors.notFound('endpoint')
    await deleteRoutesOfEndpoint(tx, orgId, id)
    return row
  })
}
