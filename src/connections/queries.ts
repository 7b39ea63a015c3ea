/** Statements of the agent_connections table that other features call. */
import type { ConnectionKeyFinder, ConnectionKeyRow } from '../auth/credentials'
import type { Sql, Tx } from '../db/client'

/** A connection key by its SHA-256, for the credential resolver (the `findConnectionKey` seam, plugged in by src/plugins.ts). */
export const findConnectionKey: ConnectionKeyFinder = async (sql, hash) => {
  const [row] = await sql<ConnectionKeyRow[]>`
    select c.id, c.org_id, c.address, c.key_hash, o.plan, o.api_per_minute_override
      from agent_connections c join orgs o on o.id = c.org_id
     where c.key_hash = ${hash} and c.revoked_at is null`
  return row
}

/** The cleanup job's part: invitations nobody claimed before they expired. */
export async function pruneUnclaimedInvitations(sql: Sql): Promise<number> {
  return (await sql`delete from agent_connections where claimed_at is null and invitation_expires_at < now()`).count
}

/** The connections not revoked, as a relation to join or select from (`from ${liveConnections(sql)} c`). */
export const liveConnections = (sql: Tx) => sql`(select * from agent_connections where revoked_at is null)`

/** Whether the organization has the connection, not revoked. */
export async function liveConnectionExists(sql: Tx, orgId: string, id: string): Promise<boolean> {
  return (await sql`select 1 from agent_connections where org_id = ${orgId} and id = ${id} and revoked_at is null`).length > 0
}
