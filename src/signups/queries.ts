/** Statements of the signups table that other features call. */
import type { Sql } from '../db/client'

/** The cleanup job's part: signups live 24 hours, as long as they count towards the per-address daily cap. */
export async function pruneExpiredSignups(sql: Sql): Promise<number> {
  return (await sql`delete from signups where expires_at < now()`).count
}
