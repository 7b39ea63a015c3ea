/**
 * Reads of the chain the service makes itself, whatever facilitator settles: the token's
 * `authorizationState`, and, when an authorization is already used, which transaction used it
 * (its `AuthorizationUsed` log) and whether that transaction moved exactly the authorized
 * transfer. That is how a crash between sending and recording, or a front-run, is resolved from
 * chain state instead of guessed.
 */
import { createPublicClient, http, parseEventLogs, type PublicClient } from 'viem'
import type { Config } from '../config'
import { perProcess, type AppContext } from '../context'
import { networkInfo, type Network } from './networks'
import { TOKEN_ABI, type Authorization } from './token'

/** How far back (in blocks) the log of a used authorization is looked for. */
const LOG_LOOKBACK_BLOCKS = 100_000n

export function rpcUrl(config: Config, network: Network): string | undefined {
  return network === 'base' ? config.X402_RPC_URL_BASE : config.X402_RPC_URL_BASE_SEPOLIA
}

const clients = perProcess(() => new Map<Network, PublicClient | null>())

/** One public client per process and network (null when the network has no RPC URL). */
export function publicClient(ctx: AppContext, network: Network): PublicClient | null {
  const perNetwork = clients(ctx)
  if (!perNetwork.has(network)) {
    const url = rpcUrl(ctx.config, network)
    perNetwork.set(network, url ? (createPublicClient({ transport: http(url, { retryCount: 0, timeout: 15_000 }) }) as PublicClient) : null)
  }
  return perNetwork.get(network)!
}

export async function isAuthorizationUsed(client: PublicClient, network: Network, from: `0x${string}`, nonce: `0x${string}`): Promise<boolean> {
  return client.readContract({ address: networkInfo(network).usdc, abi: TOKEN_ABI, functionName: 'authorizationState', args: [from, nonce] })
}

export type UsedAuthorization = { tx: `0x${string}`; exactTransfer: boolean } | null

/** The transaction that used the authorization, and whether it transferred exactly `auth` (from, to, value) on the token. */
export async function findAuthorizationUse(client: PublicClient, network: Network, auth: Authorization): Promise<UsedAuthorization> {
  const token = networkInfo(network).usdc
  // cacheTime 0: viem otherwise reuses a block number up to 4 s old, older than the transaction looked for
  const latest = await client.getBlockNumber({ cacheTime: 0 })
  const logs = await client.getContractEvents({
    address: token,
    abi: TOKEN_ABI,
    eventName: 'AuthorizationUsed',
    args: { authorizer: auth.from, nonce: auth.nonce },
    fromBlock: latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n,
    toBlock: 'latest',
  })
  const used = logs[0]
  if (!used?.transactionHash) return null
  const receipt = await client.getTransactionReceipt({ hash: used.transactionHash })
  const transfers = parseEventLogs({ abi: TOKEN_ABI, eventName: 'Transfer', logs: receipt.logs.filter(l => l.address.toLowerCase() === token.toLowerCase()) })
  const exactTransfer =
    receipt.status === 'success' &&
    transfers.some(
      t => t.args.from.toLowerCase() === auth.from.toLowerCase() && t.args.to.toLowerCase() === auth.to.toLowerCase() && t.args.value === auth.value,
    )
  return { tx: used.transactionHash, exactTransfer }
}
