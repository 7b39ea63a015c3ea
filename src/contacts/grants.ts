/**
 * The send grant of a contact: admitting a published agent from a network's directory records
 * one (src/networks/discovery.ts), and the reply-only gate (src/sending/gates.ts) honours it
 * while the agent still consents, i.e. it is still published with accepts_contacts in that
 * network and both organizations are still active members of it. Otherwise the grant is denied;
 * a contact added by hand has none: adding an address to one's contacts is no consent of the
 * address to be written to.
 */
import type { Tx } from '../db/client'

export type GrantState = 'none' | 'granted' | 'denied'

/** The grant state of the contact row aliased `c`, as a SQL expression. */
export const grantState = (sql: Tx) => sql`
  case when c.grant_recorded_at is null then 'none'
       when exists (
         select 1 from published_agents pa
           join network_members theirs on theirs.network_id = c.network_id and theirs.org_id = pa.org_id and theirs.status = 'active'
           join network_members ours on ours.network_id = c.network_id and ours.org_id = c.org_id and ours.status = 'active'
          where pa.id = c.agent_id and pa.address = c.address and pa.accepts_contacts) then 'granted'
       else 'denied' end`

/** The grant state of each contact of `ownerAddress` among `addresses` (absent: no contact). */
export async function grantsOf(sql: Tx, orgId: string, ownerAddress: string, addresses: string[]): Promise<Map<string, GrantState>> {
  const rows = await sql<{ address: string; grant: GrantState }[]>`
    select c.address, ${grantState(sql)} as grant from contacts c
     where c.org_id = ${orgId} and c.owner_address = ${ownerAddress} and c.address = any(${addresses})`
  return new Map(rows.map(r => [r.address, r.grant]))
}
