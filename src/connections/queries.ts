/** The agent_connections table: its statements, for the connections feature and the features that call it. */
import { randomUUIDv7 } from 'bun'
import type { ConnectionKeyFinder, ConnectionKeyRow } from '../auth/credentials'
import type { Sql, Tx } from '../db/client'
import { orgsAs } from '../account/org-queries'
import { isVerifiedDomainOf } from '../domains/queries'
import { isInboxOf } from '../mail/inbox-queries'

/** A connection key by its SHA-256, for the credential resolver (the `findConnectionKey` seam, plugged in by src/plugins.ts). */
export const findConnectionKey: ConnectionKeyFinder = async (sql, hash) => {
  const [row] = await sql<ConnectionKeyRow[]>`
    select c.id, c.org_id, c.address, c.key_hash, o.plan, o.api_per_minute_override
      from agent_connections c join ${orgsAs(sql, 'o')} on o.id = c.org_id
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

/** A new invitation for one address, valid `ttlSeconds`. */
export async function insertInvitation(
  sql: Tx,
  i: { orgId: string; address: string; label: string | null; createdBy: string | null; ownerAddress: string; invitationHash: Buffer; ttlSeconds: number },
): Promise<{ id: string; expires_at: Date }> {
  const [row] = await sql<{ id: string; expires_at: Date }[]>`
    insert into agent_connections (id, org_id, address, label, created_by, setup_owner_address, invitation_hash, invitation_expires_at)
    values (${randomUUIDv7()}, ${i.orgId}, ${i.address}, ${i.label}, ${i.createdBy}, ${i.ownerAddress}, ${i.invitationHash},
            now() + make_interval(secs => ${i.ttlSeconds}))
    returning id, invitation_expires_at as expires_at`
  return row!
}

/** An invitation as a claim sees it: whether it was claimed, and whether it is still usable (not withdrawn, not expired). */
export interface InvitationRow {
  id: string
  org_id: string
  address: string
  setup_owner_address: string
  claimed: boolean
  usable: boolean
}

/** The invitation of a code's hash, locked for its claim. */
export async function lockInvitation(tx: Tx, invitationHash: Buffer): Promise<InvitationRow | undefined> {
  const [row] = await tx<InvitationRow[]>`
    select id, org_id, address, setup_owner_address, claimed_at is not null as claimed,
           revoked_at is null and invitation_expires_at > now() as usable
      from agent_connections where invitation_hash = ${invitationHash} for update`
  return row
}

/** Revokes the address's claimed connections (a new claim replaces them); their ids. */
export async function revokeClaimedConnections(tx: Tx, address: string): Promise<string[]> {
  const rows = await tx<{ id: string }[]>`
    update agent_connections set revoked_at = now(), revoked_reason = 'reconnected'
     where address = ${address} and claimed_at is not null and revoked_at is null returning id`
  return rows.map(r => r.id)
}

/** Marks the invitation claimed, with the key's hash. */
export async function markClaimed(tx: Tx, id: string, keyHash: Buffer): Promise<void> {
  await tx`update agent_connections set claimed_at = now(), key_hash = ${keyHash} where id = ${id}`
}

/** Revokes one connection key of the address (`keyId`), or all its connections and open invitations; the ids and when. */
export function disconnectAddress(sql: Tx, orgId: string, address: string, which: { keyId: string } | 'all') {
  const only = which === 'all' ? sql`(claimed_at is not null or invitation_expires_at > now())` : sql`id = ${which.keyId}`
  return sql<{ id: string; at: Date }[]>`
    update agent_connections set revoked_at = now(), revoked_reason = 'disconnected'
     where org_id = ${orgId} and address = ${address} and revoked_at is null and ${only}
    returning id, revoked_at as at`
}

/** Whether `address` is a managed inbox of the organization, or its `domain` one of the organization's verified domains. */
export async function isInboxOrVerifiedDomainOf(sql: Tx, orgId: string, address: string, domain: string): Promise<boolean> {
  const [row] = await sql<{ ok: boolean }[]>`
    select ${isInboxOf(sql, orgId, address)} or ${isVerifiedDomainOf(sql, orgId, domain)} as ok`
  return row!.ok
}
