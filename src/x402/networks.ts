/**
 * The networks x402 payments run on, and their canonical USDC. The EIP-712 domain of each token
 * is its real on-chain one: base mainnet's USDC is named "USD Coin", base-sepolia's "USDC" (both
 * version "2"); a signature over the wrong name does not recover on chain.
 */
import { getAddress, type Address } from 'viem'

export const NETWORKS = ['base', 'base-sepolia'] as const
export type Network = (typeof NETWORKS)[number]

export interface NetworkInfo {
  network: Network
  chainId: number
  /** CAIP-2 id, as x402 v2 clients name the network */
  caip2: string
  /** canonical USDC, EIP-55 checksummed */
  usdc: Address
  eip712: { name: string; version: string }
}

const TABLE: Record<Network, NetworkInfo> = {
  base: {
    network: 'base',
    chainId: 8453,
    caip2: 'eip155:8453',
    usdc: getAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'),
    eip712: { name: 'USD Coin', version: '2' },
  },
  'base-sepolia': {
    network: 'base-sepolia',
    chainId: 84532,
    caip2: 'eip155:84532',
    usdc: getAddress('0x036cbd53842c5426634e7929541ec2318f3dcf7e'),
    eip712: { name: 'USDC', version: '2' },
  },
}

export function networkInfo(network: Network): NetworkInfo {
  return TABLE[network]
}

export function isNetwork(value: unknown): value is Network {
  return typeof value === 'string' && (NETWORKS as readonly string[]).includes(value)
}

/** The network of a CAIP-2 id (`eip155:84532`), or null. */
export function networkOfCaip2(id: string): Network | null {
  return NETWORKS.find(n => TABLE[n].caip2 === id) ?? null
}
