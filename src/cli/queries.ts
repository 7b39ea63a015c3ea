/** Statements of the device-login tables (cli_device_codes, cli_device_pages) that other features call. */
import type { Sql } from '../db/client'

/** The cleanup job's part: device logins past their expiry, pages before the codes they point to. */
export async function pruneExpiredDeviceLogins(sql: Sql) {
  const pages = await sql`delete from cli_device_pages where expires_at < now()`
  const codes = await sql`delete from cli_device_codes where expires_at < now()`
  return { cli_device_pages: pages.count, cli_device_codes: codes.count }
}
