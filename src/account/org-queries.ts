/**
 * The orgs table (account/ owns it): its row type and every statement on it; another folder
 * joins it through `orgsAs`. Organizations are created by the operator command, zero-touch
 * agent signup and tests. (Their people: user-queries.ts and membership-queries.ts.)
 */
import { randomUUIDv7 } from 'bun'
import type postgres from 'postgres'
import type { Tx } from '../db/client'
import { errors } from '../errors'
import { ORGS_CHANNEL } from '../events'
import type { Plan } from './plans'

/** What an organization may do and how much it holds: its plan, the operator's overrides, its storage counters. */
export interface OrgRow {
  plan: Plan
  extra_entitlements: string[]
  storage_used_bytes: number
  emails_count: number
  api_per_minute_override: number | null
  send_per_hour_override: number | null
  send_per_day_override: number | null
}

export interface NewOrg extends Pick<OrgRow, 'plan'> {
  name: string
}

export async function insertOrg(tx: Tx, org: NewOrg): Promise<string> {
  const id = randomUUIDv7()
  await tx`insert into orgs (id, name, plan) values (${id}, ${org.name}, ${org.plan})`
  return id
}

/** Whether an organization has this id (compared as text, so a malformed id is simply unknown). */
export async function orgExists(sql: Tx, orgId: string): Promise<boolean> {
  const [org] = await sql`select 1 from orgs where id::text = ${orgId}`
  return Boolean(org)
}

/**
 * `orgs` under `alias`, for a statement of another folder that reads an organization's columns
 * in its own round trip (a join on a hot path: credentials, recipients, a page's names).
 */
export const orgsAs = (sql: Tx, alias: string): postgres.Fragment => sql`orgs ${sql(alias)}`

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

/** The organization's plan, overrides and storage counters, or undefined for an unknown organization. */
export async function orgById(sql: Tx, orgId: string): Promise<OrgRow | undefined> {
  const [org] = await sql<OrgRow[]>`
    select plan, extra_entitlements, storage_used_bytes, emails_count, api_per_minute_override, send_per_hour_override, send_per_day_override
      from orgs where id = ${orgId}`
  return org
}

/** The organization's plan and the entitlements an operator granted, or undefined for an unknown organization. */
export async function orgPlanAndEntitlements(sql: Tx, orgId: string): Promise<Pick<OrgRow, 'plan' | 'extra_entitlements'> | undefined> {
  const [org] = await sql<Pick<OrgRow, 'plan' | 'extra_entitlements'>[]>`select plan, extra_entitlements from orgs where id = ${orgId}`
  return org
}

/** The organization's plan, or null for an unknown organization. */
export async function planOf(sql: Tx, orgId: string): Promise<Plan | null> {
  const [org] = await sql<Pick<OrgRow, 'plan'>[]>`select plan from orgs where id = ${orgId}`
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

/**
 * Counts a message of `bytes` in the organization's storage if it fits under `limit`. The check
 * and the count are one update, under the row lock the commit releases: concurrent mail cannot
 * together overshoot the limit.
 */
export async function reserveStorage(tx: Tx, orgId: string, bytes: number, limit: number): Promise<boolean> {
  const rows = await tx`
    update orgs set storage_used_bytes = storage_used_bytes + ${bytes}, emails_count = emails_count + 1
     where id = ${orgId} and storage_used_bytes + ${bytes} <= ${limit}
    returning id`
  return rows.length > 0
}

/** Adds bytes and emails to the storage counters of each organization (one update, in the order of their ids). */
export const countStorage = (tx: Tx, orgIds: string[], bytes: number[], emails: number[]): postgres.Fragment => tx`
  update orgs set storage_used_bytes = storage_used_bytes + c.bytes, emails_count = emails_count + c.emails
    from (select * from unnest(${orgIds}::uuid[], ${bytes}::bigint[], ${emails}::int[]) as c(org_id, bytes, emails) order by org_id) c
   where orgs.id = c.org_id`

/** The update that counts one stored message of `bytes`, as a statement to join to the store's (skipped when `skip`). */
export const countStoredMessage = (tx: Tx, orgId: string, bytes: number, skip: boolean): postgres.Fragment => tx`
  update orgs set storage_used_bytes = storage_used_bytes + ${bytes}, emails_count = emails_count + 1
   where id = ${orgId} and not ${skip}::boolean`
