/** Organizations and their people: created by the operator command, zero-touch agent signup and tests. */
import { randomUUIDv7 } from 'bun'
import type { Tx } from '../db/client'
import type { Role } from '../auth/principal'
import { errors } from '../errors'
import { ORGS_CHANNEL } from '../events'
import type { Plan } from './plans'

export interface NewOrg {
  name: string
  plan: Plan
}

export async function insertOrg(tx: Tx, org: NewOrg): Promise<string> {
  const id = randomUUIDv7()
  await tx`insert into orgs (id, name, plan) values (${id}, ${org.name}, ${org.plan})`
  return id
}

/** The user with this email, created when missing (without a password: they sign in later). */
export async function ensureUser(tx: Tx, email: string): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    insert into users (id, email) values (${randomUUIDv7()}, ${email})
    on conflict (lower(email)) do update set email = users.email
    returning id`
  return row!.id
}

export async function addMember(tx: Tx, orgId: string, userId: string, role: Role) {
  await tx`
    insert into memberships (org_id, user_id, role) values (${orgId}, ${userId}, ${role})
    on conflict (org_id, user_id) do update set role = excluded.role`
}

/** Tells every listening process, on commit, that what the organization may do changed (events.ts `onOrgChanged`). */
const announce = (tx: Tx, orgId: string) => tx`select pg_notify(${ORGS_CHANNEL}, ${orgId})`

/** Changes an organization's plan; throws not_found for an unknown organization. */
export async function setPlan(tx: Tx, orgId: string, plan: Plan) {
  const rows = await tx`update orgs set plan = ${plan} where id = ${orgId} returning id`
  if (!rows.length) throw errors.notFound('org')
  await announce(tx, orgId)
}

export async function grantEntitlement(tx: Tx, orgId: string, entitlement: string) {
  const rows = await tx`
    update orgs set extra_entitlements = array(select distinct unnest(extra_entitlements || array[${entitlement}::text]))
     where id = ${orgId} returning id`
  if (!rows.length) throw errors.notFound('org')
  await announce(tx, orgId)
}

/** Overrides the plan's API requests per minute for one organization (null restores the plan's). */
export async function setApiLimit(tx: Tx, orgId: string, perMinute: number | null) {
  const rows = await tx`update orgs set api_per_minute_override = ${perMinute} where id = ${orgId} returning id`
  if (!rows.length) throw errors.notFound('org')
  await announce(tx, orgId)
}

/** Opts an organization in to (or out of) irreversible content discard (POST /v1/emails/{id}/discard). */
export async function setContentDiscard(tx: Tx, orgId: string, enabled: boolean) {
  const rows = await tx`update orgs set content_discard_enabled = ${enabled} where id = ${orgId} returning id`
  if (!rows.length) throw errors.notFound('org')
}

/** Overrides the plan's sends per hour and per day for one organization (null restores the plan's). */
export async function setSendLimits(tx: Tx, orgId: string, limits: { perHour: number | null; perDay: number | null }) {
  const rows = await tx`
    update orgs set send_per_hour_override = ${limits.perHour}, send_per_day_override = ${limits.perDay} where id = ${orgId} returning id`
  if (!rows.length) throw errors.notFound('org')
}

/** Throws not_found unless the organization exists. */
export async function requireOrg(sql: Tx, orgId: string): Promise<void> {
  const [org] = await sql`select 1 from orgs where id = ${orgId}`
  if (!org) throw errors.notFound('org')
}

/** The organization's plan, or null for an unknown organization. */
export async function planOf(sql: Tx, orgId: string): Promise<Plan | null> {
  const [org] = await sql<{ plan: Plan }[]>`select plan from orgs where id = ${orgId}`
  return org?.plan ?? null
}

/** Whether the organization opted in to irreversible content discard. */
export async function contentDiscardEnabled(sql: Tx, orgId: string): Promise<boolean> {
  const [org] = await sql<{ enabled: boolean }[]>`select content_discard_enabled as enabled from orgs where id = ${orgId}`
  return org?.enabled === true
}

/** Gives back storage a discarded message held (never below zero). */
export async function releaseStorage(tx: Tx, orgId: string, bytes: number): Promise<void> {
  await tx`update orgs set storage_used_bytes = greatest(0, storage_used_bytes - ${bytes}) where id = ${orgId}`
}

/** The statement that counts the organization's stored emails (the counter the store keeps), as a list's total. */
export const storedEmailsCount = (sql: Tx, orgId: string) => sql`select emails_count from orgs where id = ${orgId}`

/** The organization's credit balance in cents; not_found for an unknown organization. */
export async function creditBalanceCents(sql: Tx, orgId: string): Promise<number> {
  const [row] = await sql<{ balance: number }[]>`select credit_balance_cents as balance from orgs where id = ${orgId}`
  if (!row) throw errors.notFound('org')
  return Number(row.balance)
}

/** Adds redeemed credit to the organization's balance. */
export async function addCredit(tx: Tx, orgId: string, cents: number): Promise<void> {
  await tx`update orgs set credit_balance_cents = credit_balance_cents + ${cents} where id = ${orgId}`
}
