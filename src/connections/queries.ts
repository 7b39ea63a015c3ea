/** Statements of the agent_connections table that other features call. */
import type { Sql } from '../db/client'

/** The cleanup job's part: invitations nobody claimed before they expired. */
export async function pruneUnclaimedInvitations(sql: Sql): Promise<number> {
  return (await sql`delete from agent_connections where claimed_at is null and invitation_expires_at < now()`).count
}
