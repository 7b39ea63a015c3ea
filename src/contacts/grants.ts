/**
 * The send grant of a contact: admitting a published agent from a network's directory records
 * one (./admission.ts), and the reply-only gate (src/sending/gates.ts) honours it
 * while the agent still consents, i.e. it is still published with accepts_contacts in that
 * network and both organizations are still active members of it. Otherwise the grant is denied;
 * a contact added by hand has none: adding an address to one's contacts is no consent of the
 * address to be written to.
 */
import type { Tx } from '../db/client'
import { contactGrants, type GrantState } from './queries'

/** The grant state of each contact of `ownerAddress` among `addresses` (absent: no contact). */
export async function grantsOf(sql: Tx, orgId: string, ownerAddress: string, addresses: string[]): Promise<Map<string, GrantState>> {
  const rows = await contactGrants(sql, orgId, ownerAddress, addresses)
  return new Map(rows.map(r => [r.address, r.grant]))
}
