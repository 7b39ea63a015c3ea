/**
 * Operator commands for what the API leaves to the dashboard: creating organizations, changing
 * plans and entitlements, minting credit codes. Each returns the JSON the CLI prints.
 */
import type { Config } from '../config'
import type { ServerKeys } from '../crypto'
import type { Sql } from '../db/client'
import { addMember, addMemberUnlessPresent, firstOwner } from '../account/membership-queries'
import { ensureUser, setPassword } from '../account/user-queries'
import { grantEntitlement, insertOrg, orgExists, setApiLimit, setContentDiscard, setPlan, setSendLimits } from '../account/org-queries'
import { currentRole } from '../account/roles'
import { ENTITLEMENTS, PLANS, isEntitlement, isPlan } from '../account/plans'
import { createApiKey } from '../auth/api-keys'
import { mintCreditCode } from '../credits/service'
import { setSettleCaps } from '../x402/caps'
import { markDomainVerified, presentDomain } from '../domains/service'
import { ApiError } from '../errors'
import { hashPassword } from '../oauth/sign-in'
import type { Role } from '../auth/principal'

export class UsageError extends Error {}

function planArg(value: string | undefined) {
  if (!value || !isPlan(value)) throw new UsageError(`plan: must be one of ${PLANS.join(', ')}`)
  return value
}

export async function createOrgCommand(sql: Sql, opts: { plan?: string; email?: string; name?: string }) {
  const plan = planArg(opts.plan)
  return sql.begin(async tx => {
    const orgId = await insertOrg(tx, { name: opts.name ?? opts.email ?? 'Organization', plan })
    // Every organization has an owner; without --email it is a placeholder person who can be
    // given a real address and password later (`admin user create`).
    const userId = await ensureUser(tx, opts.email ?? `owner@${orgId}.invalid`)
    await addMember(tx, orgId, userId, 'owner')
    const key = await createApiKey(tx, orgId, userId, 'operator')
    return { org_id: orgId, user_id: userId, plan, api_key: key.key, key_id: key.id }
  })
}

const ROLES: Role[] = ['owner', 'admin', 'member']

/**
 * A person who can sign in on the OAuth authorization page: creates the user (or sets the
 * password of an existing one) and, with --org, adds the membership (--role, default member;
 * an existing membership keeps its role unless --role is given).
 */
export async function createUserCommand(sql: Sql, opts: { email?: string; password?: string; org?: string; role?: string }) {
  const email = opts.email?.trim()
  if (!email || !/^[^@\s]+@[^@\s]+$/.test(email) || email.length > 320) throw new UsageError('email: must be an email address')
  if (!opts.password || opts.password.length < 8 || opts.password.length > 1024) throw new UsageError('password: must be 8 to 1024 characters')
  if (opts.role !== undefined && !ROLES.includes(opts.role as Role)) throw new UsageError(`role: must be one of ${ROLES.join(', ')}`)
  if (opts.role !== undefined && !opts.org) throw new UsageError('role: needs --org')
  const hash = await hashPassword(opts.password)
  return sql.begin(async tx => {
    if (opts.org) {
      if (!(await orgExists(tx, opts.org))) throw new UsageError(`org_id: no organization ${opts.org}`)
    }
    const userId = await ensureUser(tx, email)
    await setPassword(tx, userId, hash)
    if (!opts.org) return { user_id: userId, email }
    if (opts.role) await addMember(tx, opts.org, userId, opts.role as Role)
    else await addMemberUnlessPresent(tx, opts.org, userId)
    return { user_id: userId, email, org_id: opts.org, role: (await currentRole(tx, opts.org, userId))! }
  })
}

export async function setPlanCommand(sql: Sql, orgId: string | undefined, plan: string | undefined) {
  if (!orgId) throw new UsageError('org_id: is required')
  const p = planArg(plan)
  await sql.begin(tx => setPlan(tx, orgId, p))
  return { org_id: orgId, plan: p }
}

export async function entitleCommand(sql: Sql, orgId: string | undefined, entitlement: string | undefined) {
  if (!orgId) throw new UsageError('org_id: is required')
  if (!entitlement || !isEntitlement(entitlement)) throw new UsageError(`entitlement: must be one of ${ENTITLEMENTS.join(', ')}`)
  await sql.begin(tx => grantEntitlement(tx, orgId, entitlement))
  return { org_id: orgId, entitlement }
}

export async function setApiLimitCommand(sql: Sql, orgId: string | undefined, perMinute: string | undefined) {
  if (!orgId) throw new UsageError('org_id: is required')
  const limit = perMinute === 'plan' ? null : Number(perMinute)
  if (limit !== null && (!Number.isInteger(limit) || limit <= 0)) throw new UsageError('api_per_minute: must be a positive integer or "plan"')
  await sql.begin(tx => setApiLimit(tx, orgId, limit))
  return { org_id: orgId, api_per_minute: limit ?? 'plan' }
}

/** Overrides the plan's send_per_hour and send_per_day for one organization; "plan" restores the plan's value. */
export async function setSendLimitsCommand(sql: Sql, orgId: string | undefined, perHour: string | undefined, perDay: string | undefined) {
  if (!orgId) throw new UsageError('org_id: is required')
  const limit = (name: string, value: string | undefined) => {
    if (value === 'plan') return null
    const n = Number(value)
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${name}: must be a positive integer or "plan"`)
    return n
  }
  const hour = limit('send_per_hour', perHour)
  const day = limit('send_per_day', perDay)
  await sql.begin(tx => setSendLimits(tx, orgId, { perHour: hour, perDay: day }))
  return { org_id: orgId, send_per_hour: hour ?? 'plan', send_per_day: day ?? 'plan' }
}

export async function createKeyCommand(sql: Sql, orgId: string | undefined, name = 'operator') {
  if (!orgId) throw new UsageError('org_id: is required')
  const owner = await firstOwner(sql, orgId)
  const key = await sql.begin(tx => createApiKey(tx, orgId, owner, name))
  return { org_id: orgId, key_id: key.id, api_key: key.key }
}

export async function mintCreditCommand(sql: Sql, amountCents: string | undefined) {
  const amount = Number(amountCents)
  if (!Number.isInteger(amount) || amount <= 0) throw new UsageError('amount-cents: must be a positive integer')
  const credit = await mintCreditCode(sql, amount)
  return { credit_id: credit.id, code: credit.code, amount_cents: amount }
}

/** Marks a domain verified for the organization without DNS, claiming it first if needed (no MX check). */
export async function verifyDomainCommand(
  sql: Sql,
  keys: ServerKeys,
  config: Pick<Config, 'MANAGED_DOMAIN' | 'SMTP_HOSTNAME'>,
  orgId: string | undefined,
  domain: string | undefined,
) {
  if (!orgId) throw new UsageError('org_id: is required')
  if (!domain) throw new UsageError('domain: is required')
  if (!(await orgExists(sql, orgId))) throw new UsageError(`org_id: no organization ${orgId}`)
  try {
    const row = await markDomainVerified(sql, keys, config.MANAGED_DOMAIN, orgId, domain)
    return { org_id: orgId, ...presentDomain(row, config.SMTP_HOSTNAME) }
  } catch (error) {
    // a bad name is a usage error; a name verified by another organization stays a plain failure
    if (error instanceof ApiError && error.code === 'validation_error') throw new UsageError(error.message)
    throw error
  }
}

export async function contentDiscardCommand(sql: Sql, orgId: string | undefined, value: string | undefined) {
  if (!orgId) throw new UsageError('org_id: is required')
  if (value !== 'on' && value !== 'off') throw new UsageError('content discard: must be on or off')
  await sql.begin(tx => setContentDiscard(tx, orgId, value === 'on'))
  return { org_id: orgId, content_discard_enabled: value === 'on' }
}

/** Overrides a payee's x402 settle caps (base units per UTC day, per UTC month, per settle; "default" restores one). */
export async function setSettleCapsCommand(
  sql: Sql,
  orgId: string | undefined,
  daily: string | undefined,
  monthly: string | undefined,
  perSettle: string | undefined,
) {
  if (!orgId) throw new UsageError('org_id: is required')
  if (!daily || !monthly || !perSettle) throw new UsageError('usage: x402 set-caps <org_id> <daily|default> <monthly|default> <per_settle|default>')
  try {
    return await setSettleCaps(sql, orgId, { daily, monthly, per_settle: perSettle })
  } catch (error) {
    if (error instanceof ApiError && error.code === 'validation_error') throw new UsageError(error.message)
    throw error
  }
}
