/** The x402_payout_addresses table: the wallets an organization is paid to, one default per network. */
import { randomUUIDv7 } from 'bun'
import type { Sql, Tx } from '../db/client'
import type { PayoutAddress, Stored } from './model'
import type { Network } from './networks'

export type PayoutRow = Stored<typeof PayoutAddress, 'created_at'>

/** Serializes registrations of one organization and network for the transaction: one default at a time. */
export const lockPayoutRegistrations = (tx: Tx, orgId: string, network: Network) =>
  tx`select pg_advisory_xact_lock(hashtextextended(${`x402-payout:${orgId}:${network}`}, 0))`

/** Makes the network's default address (registered already or new) `address`, the previous default no longer one. */
export async function setDefaultPayout(tx: Tx, orgId: string, network: Network, address: string): Promise<PayoutRow> {
  await tx`update x402_payout_addresses set is_default = false where org_id = ${orgId} and network = ${network} and is_default`
  const [row] = await tx<PayoutRow[]>`
    insert into x402_payout_addresses (id, org_id, network, address, is_default)
    values (${randomUUIDv7()}, ${orgId}, ${network}, ${address}, true)
    on conflict (org_id, network, address) do update set is_default = true
    returning id, network, address, is_default, created_at`
  return row!
}

/** The organization's addresses: by network, its default first, then newest first. */
export function payoutAddresses(sql: Sql | Tx, orgId: string): Promise<PayoutRow[]> {
  return sql<PayoutRow[]>`
    select id, network, address, is_default, created_at from x402_payout_addresses
     where org_id = ${orgId} order by network, is_default desc, id desc`
}
