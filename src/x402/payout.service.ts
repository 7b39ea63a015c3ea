/**
 * Payout addresses: the wallets an organization is paid to, one default per network. Proof of
 * control is a locally signed EIP-191 (personal_sign) statement naming the organization, the
 * network, the address and when it was issued; the address it recovers to must be the one
 * registered, and the statement must be at most 10 minutes old.
 */
import { getAddress, isAddress, recoverMessageAddress, type Hex } from 'viem'
import type { Sql, Tx } from '../db/client'
import { ApiError, errors } from '../errors'
import type { Network } from './networks'
import { lockPayoutRegistrations, payoutAddresses, setDefaultPayout, type PayoutRow } from './payout-queries'

export const STATEMENT_MAX_AGE_SECONDS = 600
/** clocks disagree a little: a statement issued slightly "in the future" is still accepted */
const CLOCK_SKEW_SECONDS = 60

/**
 * The exact statement to sign: these five lines joined by "\n" (no trailing newline), the
 * address EIP-55 checksummed and the time in ISO 8601 UTC with milliseconds.
 */
export function payoutStatement(orgId: string, network: Network, address: string, issuedAt: Date): string {
  return [
    'Register x402 payout address',
    `organization: ${orgId}`,
    `network: ${network}`,
    `address: ${getAddress(address)}`,
    `issued_at: ${issuedAt.toISOString()}`,
  ].join('\n')
}

const STATEMENT =
  /^Register x402 payout address\norganization: ([0-9a-f-]{36})\nnetwork: (base|base-sepolia)\naddress: (0x[0-9a-fA-F]{40})\nissued_at: (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/

export const presentPayout = (r: PayoutRow) => ({
  id: r.id,
  network: r.network,
  address: r.address,
  is_default: r.is_default,
  created_at: r.created_at.toISOString(),
})

export function checkAddress(field: string, address: string): `0x${string}` {
  if (!isAddress(address, { strict: false })) throw errors.validation(field, 'must be a 0x-prefixed 20-byte hex address')
  return getAddress(address)
}

/** Checks the signed statement and makes the address the network's default payout address. */
export async function registerPayoutAddress(
  sql: Sql,
  orgId: string,
  input: { network: Network; address: string; message: string; signature: string },
  now = new Date(),
): Promise<PayoutRow> {
  const address = checkAddress('address', input.address)
  const m = STATEMENT.exec(input.message)
  if (!m) throw errors.validation('message', 'must be the statement of GET /v1/x402/payout-addresses/message, unchanged')
  const [, org, network, stated, issued] = m
  if (org !== orgId) throw errors.validation('message', 'names another organization')
  if (network !== input.network) throw errors.validation('message', `names network ${network}, not ${input.network}`)
  if (stated!.toLowerCase() !== address.toLowerCase()) throw errors.validation('message', 'names another address')
  const age = (now.getTime() - Date.parse(issued!)) / 1000
  if (!(age <= STATEMENT_MAX_AGE_SECONDS))
    throw errors.validation('message', `was issued more than ${STATEMENT_MAX_AGE_SECONDS / 60} minutes ago; sign a fresh one`)
  if (age < -CLOCK_SKEW_SECONDS) throw errors.validation('message', 'is issued in the future')
  if (!/^0x[0-9a-fA-F]{130}$/.test(input.signature)) throw errors.validation('signature', 'must be a 65-byte hex EIP-191 signature')
  let signer: string
  try {
    signer = await recoverMessageAddress({ message: input.message, signature: input.signature as Hex })
  } catch {
    throw errors.validation('signature', 'does not recover to an address')
  }
  if (signer.toLowerCase() !== address.toLowerCase()) throw errors.validation('signature', `recovers to ${signer}, not to address`)
  return sql.begin(async tx => {
    await lockPayoutRegistrations(tx, orgId, input.network)
    return setDefaultPayout(tx, orgId, input.network, address)
  })
}

/** The organization's payout addresses. */
export async function listPayoutAddresses(sql: Sql | Tx, orgId: string): Promise<PayoutRow[]> {
  return payoutAddresses(sql, orgId)
}

/** `422 no_payout_address`: the network has no default payout address. */
export const noPayoutAddress = (network: Network) =>
  new ApiError('no_payout_address', `network: no payout address registered for ${network}; POST /v1/x402/payout-addresses first`, { network })
