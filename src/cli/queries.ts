/** The device-login tables (cli_device_codes, cli_device_pages): their row types and every statement of them. */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'

/** The cleanup job's part: device logins past their expiry, pages before the codes they point to. */
export async function pruneExpiredDeviceLogins(sql: Sql) {
  const pages = await sql`delete from cli_device_pages where expires_at < now()`
  const codes = await sql`delete from cli_device_codes where expires_at < now()`
  return { cli_device_pages: pages.count, cli_device_codes: codes.count }
}

export interface PollRow {
  id: string
  status: 'pending' | 'approved' | 'denied' | 'consumed'
  live: boolean
  interval_seconds: number
  /** seconds since the previous poll; null on the first */
  since_poll: number | null
}

/** A new pending device login; false when its user code clashes with a live one (draw another). */
export async function insertDeviceCode(
  tx: Tx,
  c: { deviceCodeHash: Buffer; userCode: string; clientName: string | null; deviceName: string | null; intervalSeconds: number; ttlSeconds: number },
): Promise<boolean> {
  const rows = await tx`
    insert into cli_device_codes (id, device_code_hash, user_code, client_name, device_name, interval_seconds, expires_at)
    values (${randomUUIDv7()}, ${c.deviceCodeHash}, ${c.userCode}, ${c.clientName}, ${c.deviceName},
            ${c.intervalSeconds}, now() + make_interval(secs => ${c.ttlSeconds}))
    on conflict (user_code) do nothing returning id`
  return rows.length > 0
}

/** The device login of a device code's hash, locked, as a poll sees it. */
export async function lockForPoll(tx: Tx, deviceCodeHash: Buffer): Promise<PollRow | undefined> {
  const [row] = await tx<PollRow[]>`
    select id, status, expires_at > now() as live, interval_seconds,
           extract(epoch from now() - last_polled_at)::float8 as since_poll
      from cli_device_codes where device_code_hash = ${deviceCodeHash} for update`
  return row
}

/** Records a poll, and the interval the next one must keep. */
export async function recordPoll(tx: Tx, id: string, intervalSeconds: number): Promise<void> {
  await tx`update cli_device_codes set last_polled_at = now(), interval_seconds = ${intervalSeconds} where id = ${id}`
}

/** The approved, unexpired device login of a device code's hash, locked for its redemption. */
export async function lockApproved(tx: Tx, deviceCodeHash: Buffer): Promise<{ id: string; user_id: string; org_id: string } | undefined> {
  const [row] = await tx<{ id: string; user_id: string; org_id: string }[]>`
    select id, user_id, org_id from cli_device_codes
     where device_code_hash = ${deviceCodeHash} and status = 'approved' and expires_at > now() for update`
  return row
}

/** Marks the device login redeemed, with the grant its tokens belong to. */
export async function markConsumed(tx: Tx, id: string, grantId: string): Promise<void> {
  await tx`update cli_device_codes set status = 'consumed', grant_id = ${grantId} where id = ${id}`
}

export interface PendingDevice {
  id: string
  user_code: string
  client_name: string | null
  device_name: string | null
  created_at: Date
}

/** A pending, unexpired device login by its user code. */
export async function findPendingDevice(sql: Tx, by: { userCode: string } | { id: string }): Promise<PendingDevice | null> {
  const [row] = await sql<PendingDevice[]>`
    select id, user_code, client_name, device_name, created_at from cli_device_codes
     where ${'userCode' in by ? sql`user_code = ${by.userCode}` : sql`id = ${by.id}`} and status = 'pending' and expires_at > now()`
  return row ?? null
}

/** Records the person's decision; false when the login is no longer pending (expired, decided elsewhere). */
export async function decideDevice(
  sql: Tx,
  id: string,
  decision: { approve: true; userId: string; orgId: string } | { approve: false; userId: string },
): Promise<boolean> {
  const rows = await sql`
    update cli_device_codes
       set status = ${decision.approve ? 'approved' : 'denied'}, user_id = ${decision.userId},
           org_id = ${decision.approve ? decision.orgId : null}, decided_at = now()
     where id = ${id} and status = 'pending' and expires_at > now() returning id`
  return rows.length === 1
}

export interface PageRow {
  id: string
  csrf_hash: Buffer
  browser_hash: Buffer
  user_id: string | null
  device_code_id: string | null
  live: boolean
  completed_at: Date | null
}

/** A sign-in page by id. */
export async function pageById(sql: Tx, id: string): Promise<PageRow | undefined> {
  const [row] = await sql<PageRow[]>`
    select id, csrf_hash, browser_hash, user_id, device_code_id, expires_at > now() as live, completed_at
      from cli_device_pages where id = ${id}`
  return row
}

/** A new sign-in page, valid `ttlSeconds`. */
export async function insertPage(sql: Tx, p: { id: string; csrfHash: Buffer; browserHash: Buffer; ttlSeconds: number }): Promise<void> {
  await sql`
    insert into cli_device_pages (id, csrf_hash, browser_hash, expires_at)
    values (${p.id}, ${p.csrfHash}, ${p.browserHash}, now() + make_interval(secs => ${p.ttlSeconds}))`
}

/** The person signed in on the page and the device login they named, unless the page is completed. */
export async function setPageUser(sql: Tx, id: string, userId: string, deviceCodeId: string): Promise<void> {
  await sql`update cli_device_pages set user_id = ${userId}, device_code_id = ${deviceCodeId} where id = ${id} and completed_at is null`
}

/** Completes the page; false when it already was. */
export async function completePage(tx: Tx, id: string): Promise<boolean> {
  return (await tx`update cli_device_pages set completed_at = now() where id = ${id} and completed_at is null returning id`).length > 0
}
