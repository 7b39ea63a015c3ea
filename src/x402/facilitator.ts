/**
 * Facilitators settle a verified payment on chain. Configuration picks one per network:
 * the x402 HTTP facilitator API (`/verify`, `/settle`, `/supported`) when
 * X402_FACILITATOR_URL_<NETWORK> is set, otherwise a direct JSON-RPC settler that calls the
 * token's `transferWithAuthorization` itself with viem, paying gas from X402_SETTLER_PRIVATE_KEY.
 * Our own verification has run before either is called; their failures are classified into the
 * spec's settlement reasons.
 */
import {
  BaseError,
  ContractFunctionRevertedError,
  decodeFunctionResult,
  encodeFunctionData,
  hexToNumber,
  numberToHex,
  InsufficientFundsError,
  keccak256,
  parseSignature,
  TransactionReceiptNotFoundError,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from 'viem'
import { sendRawTransactionSync } from 'viem/actions'
import type { Config } from '../config'
import { perProcess, type AppContext } from '../context'
import { networkInfo, type Network } from './networks'
import { rpcUrl } from './chain'
import { TOKEN_ABI, type Authorization } from './token'
import { signingAccount } from './secp256k1'

export type SettlementFailure =
  | 'insufficient_funds'
  | 'facilitator_unavailable'
  | 'settlement_misconfigured'
  | 'settlement_failed'
  | 'authorization_already_used'

export type SettleFailed = { ok: false; reason: SettlementFailure; message: string }
export type SettleResult = { ok: true; tx: `0x${string}` } | SettleFailed

export interface SettleRequest {
  network: Network
  authorization: Authorization
  signature: Hex
  /** reads the token's authorizationState of (from, nonce); the facilitator reads it (this way or its own) before it sends anything */
  authorizationUsed: () => Promise<boolean>
  /** the x402 v1 payment payload and requirements, as the HTTP facilitator API takes them */
  paymentPayload: unknown
  paymentRequirements: unknown
}

/**
 * A settlement whose read-only part is done: a failure found by it, or the send, which moves
 * money and is called only once the claim is durable.
 */
export type Prepared = SettleFailed | { ok: true; send: () => Promise<SettleResult> }

export interface Facilitator {
  /**
   * The read-only part of a settlement (the authorization's state, the simulation or `/verify`,
   * what the send needs), which may run while the claim commits. Never rejects.
   */
  prepare(req: SettleRequest): Promise<Prepared>
}

export function facilitatorUrl(config: Config, network: Network): string | undefined {
  return network === 'base' ? config.X402_FACILITATOR_URL_BASE : config.X402_FACILITATOR_URL_BASE_SEPOLIA
}

const fail = (reason: SettlementFailure, message: string): SettleFailed => ({ ok: false, reason, message })

/** What a viem error from a simulation or a send means for the settlement. */
export function classifyChainError(error: unknown): SettleFailed {
  const message = error instanceof BaseError ? error.shortMessage : String((error as Error)?.message ?? error)
  const revert = error instanceof BaseError ? (error.walk(e => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null) : null
  const reason = revert?.reason ?? message
  if (/exceeds balance/i.test(reason)) return fail('insufficient_funds', 'the payer does not hold enough of the token')
  if (/authorization is used|used or canceled/i.test(reason))
    return fail('authorization_already_used', 'the authorization was already used or canceled on chain')
  // the settler's own funds (the node's words, or viem's error for them), not the payer's token balance
  const full = String((error as Error)?.message ?? error)
  if (
    (error instanceof BaseError && error.walk(e => e instanceof InsufficientFundsError)) ||
    /insufficient funds for gas|insufficient funds for transfer|gas required exceeds/i.test(full)
  ) {
    return fail('settlement_misconfigured', 'the settler account cannot pay for gas')
  }
  const text = `${message} ${(error as Error)?.name ?? ''}`
  if (/HTTP request failed|fetch failed|ECONNREFUSED|Unable to connect|timed? ?out|TimeoutError|socket/i.test(text))
    return fail('facilitator_unavailable', 'the chain RPC endpoint did not answer')
  return fail('settlement_failed', `settlement did not complete: ${reason}`.slice(0, 300))
}

/** How long a settlement waits for its transaction's receipt. */
const RECEIPT_TIMEOUT_MS = 120_000
/** Receipt polls when the endpoint cannot answer with the receipt itself: at once, then backing off to 250 ms. */
const POLL_DELAYS_MS = [0, 10, 20, 40, 80, 160, 250]
/**
 * The gas limit a settlement is simulated and sent with. USDC's transferWithAuthorization uses
 * about 80,000 to 100,000 on anvil (a new recipient's balance slot costs the most); a payer whose signature
 * the token checks with a contract (EIP-1271) may need more, and is estimated instead.
 */
const SETTLE_GAS_LIMIT = 150_000n
/** Fee data older than this is refreshed in the background, and still used meanwhile... */
const FEES_REFRESH_MS = 1_000
/** ...until it is this old: maxFeePerGas is twice the base fee, which covers five full blocks of base fee rises (12.5% each) */
const FEES_MAX_AGE_MS = 10_000

const rpcCode = (error: unknown, code: number) => error instanceof BaseError && Boolean(error.walk(e => (e as { code?: number }).code === code))

const isUnsupportedMethod = (error: unknown) =>
  error instanceof BaseError &&
  Boolean(
    error.walk(
      e =>
        [-32601, -32004].includes((e as { code?: number }).code ?? 0) ||
        /method .*(not found|not supported|does not exist|unsupported)/i.test((e as Error).message ?? ''),
    ),
  )

type BatchEntry = { result: unknown } | { error: unknown }

/**
 * Reads in one JSON-RPC batch (one HTTP request, where separate calls would cost one each on
 * both sides); null when the endpoint did not answer with the batch's answers, and the caller
 * then makes the calls one by one. Endpoints that do not take batches are not asked again.
 */
function batchReader(url: string | undefined) {
  let supported = Boolean(url)
  return async (calls: { method: string; params: unknown[] }[]): Promise<BatchEntry[] | null> => {
    if (!supported) return null
    try {
      const res = await fetch(url!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', id, ...call }))),
        signal: AbortSignal.timeout(15_000),
      })
      const body = (await res.json().catch(() => null)) as { id?: number; result?: unknown; error?: unknown }[] | null
      if (!Array.isArray(body) || body.length !== calls.length) {
        if (res.status < 500) supported = false
        return null
      }
      return calls.map((_, id) => {
        const entry = body.find(r => r?.id === id)
        return entry && 'result' in entry && entry.error === undefined ? { result: entry.result } : { error: entry?.error ?? 'missing' }
      })
    } catch {
      // unreachable: the calls one by one say how
      return null
    }
  }
}

interface Fees {
  maxFeePerGas: bigint
  maxPriorityFeePerGas: bigint
}

/** The network's fees, reused for a second and refreshed in the background (a settlement waits only for the first read, or after FEES_MAX_AGE_MS idle). */
function feeSource(client: PublicClient) {
  let known: { fees: Fees; at: number } | null = null
  let loading: Promise<Fees> | null = null
  const refresh = () =>
    (loading ??= (async () => {
      try {
        const block = await client.getBlock({ blockTag: 'latest' })
        const maxPriorityFeePerGas = await client.estimateMaxPriorityFeePerGas({ block } as never)
        const fees = { maxFeePerGas: (block.baseFeePerGas ?? 0n) * 2n + maxPriorityFeePerGas, maxPriorityFeePerGas }
        known = { fees, at: Date.now() }
        return fees
      } finally {
        loading = null
      }
    })())
  return async (): Promise<Fees> => {
    const age = known ? Date.now() - known.at : Infinity
    if (age > FEES_MAX_AGE_MS) return refresh()
    if (age > FEES_REFRESH_MS) refresh().catch(() => {})
    return known!.fees
  }
}

/** Sends of one settlement whose nonce another sender took first, before it fails. */
const NONCE_ATTEMPTS = 5

/**
 * The node refused a transaction because its nonce is taken: mined already, or held in the pool by
 * another transaction of the key (the node's words differ). Nothing of this transaction was
 * accepted, so it may be sent again on a fresh nonce. ("already known" is not one: that is this
 * very transaction, in the pool already.)
 */
const isNonceTaken = (error: unknown) =>
  /nonce too low|nonce has already been used|replacement transaction underpriced|NonceTooLow/i.test(String((error as Error)?.message ?? error))

/**
 * Transaction nonces of the settler key. The chain's pending count is read with the checks of
 * each settlement (another process may have sent with the key), and the nonce handed out is at
 * least the one after the last handed out here, so concurrent settlements of this process get
 * distinct nonces before their transactions reach the pool.
 */
function nonceSource(client: PublicClient, address: Hex) {
  let next = 0
  return {
    pending: () => client.getTransactionCount({ address, blockTag: 'pending' }),
    take(pending: number): number {
      const nonce = Math.max(pending, next)
      next = nonce + 1
      return nonce
    },
    /** after a failed send (the transaction may not be in the pool): trust the chain's count again */
    reset() {
      next = 0
    },
  }
}

/**
 * Sends `transferWithAuthorization` itself, in as few round trips as the checks allow: the
 * token's `authorizationState`, the simulation (`eth_call` of the transfer from the settler with
 * the gas limit it is sent with, on the latest state) and the settler's pending transaction
 * count are read in one JSON-RPC batch; fees and the chain id are kept here (see `feeSource`). A simulation that fails is repeated as `eth_estimateGas`, whose revert carries
 * the token's reason (or whose estimate replaces the gas limit, for a payer that needs more).
 * Then the transaction is signed here and sent with `eth_sendRawTransactionSync` (EIP-7966),
 * which answers with the receipt. An endpoint without that method gets `eth_sendRawTransaction`
 * and receipt polls, at once and then backing off.
 */
export function rpcFacilitator(config: Config, network: Network, client: PublicClient): Facilitator {
  const key = config.X402_SETTLER_PRIVATE_KEY
  const info = networkInfo(network)
  // Concurrent settlements from one key need distinct transaction nonces (see nonceSource). Several
  // processes settling with one key may take the same nonce at the same moment: the node refuses the
  // second transaction, which is sent again on the next nonce (isNonceTaken).
  const account = key ? signingAccount(key as Hex) : null
  const nonces = account ? nonceSource(client, account.address) : null
  const fees = feeSource(client)
  const readBatch = batchReader(rpcUrl(config, network))
  let chainId: Promise<number> | null = null
  let syncSend = true

  async function sendAndWait(serialized: Hex): Promise<TransactionReceipt> {
    let hash: Hex | null = null
    if (syncSend) {
      try {
        // no timeout parameter: implementations disagree on its type; the endpoint's own wait applies
        return await sendRawTransactionSync(client as never, { serializedTransaction: serialized })
      } catch (error) {
        // EIP-7966 error 4: accepted, not yet mined within the wait
        if (rpcCode(error, 4)) hash = keccak256(serialized)
        else if (isUnsupportedMethod(error)) syncSend = false
        else throw error
      }
    }
    hash ??= await client.sendRawTransaction({ serializedTransaction: serialized })
    const deadline = Date.now() + RECEIPT_TIMEOUT_MS
    for (let i = 0; ; i++) {
      await Bun.sleep(POLL_DELAYS_MS[Math.min(i, POLL_DELAYS_MS.length - 1)]!)
      try {
        return await client.getTransactionReceipt({ hash })
      } catch (error) {
        if (!(error instanceof TransactionReceiptNotFoundError) || Date.now() > deadline) throw error
      }
    }
  }

  return {
    async prepare(req) {
      if (!account || !nonces) return fail('settlement_misconfigured', 'no settler key is configured (X402_SETTLER_PRIVATE_KEY)')
      const a = req.authorization
      const { v, r, s, yParity } = parseSignature(req.signature)
      const args = [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v ?? BigInt(yParity + 27)), r, s] as const
      const call = { address: info.usdc, abi: TOKEN_ABI, functionName: 'transferWithAuthorization', args } as const
      const data = encodeFunctionData(call)
      try {
        chainId ??= client.getChainId().catch(error => {
          chainId = null
          throw error
        })
        // authorizationState, the simulation and the pending count in one batch; each read that
        // does not come back from it is made on its own (the simulation as eth_estimateGas, above)
        const batch = readBatch([
          {
            method: 'eth_call',
            params: [{ to: info.usdc, data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'authorizationState', args: [a.from, a.nonce] }) }, 'latest'],
          },
          { method: 'eth_call', params: [{ from: account.address, to: info.usdc, data, gas: numberToHex(SETTLE_GAS_LIMIT) }, 'latest'] },
          { method: 'eth_getTransactionCount', params: [account.address, 'pending'] },
        ])
        // an answer of the batch, or null: the batch was not answered, or this call failed in it
        const entry = async (i: number) => {
          const e = (await batch)?.[i]
          return e && 'result' in e && typeof e.result === 'string' ? (e.result as Hex) : null
        }
        const used = entry(0).then(r =>
          r === null ? req.authorizationUsed() : decodeFunctionResult({ abi: TOKEN_ABI, functionName: 'authorizationState', data: r }),
        )
        const estimate = () => client.estimateContractGas({ ...call, account })
        const gasLimit = entry(1).then(async r => {
          if (r !== null) return SETTLE_GAS_LIMIT
          // a failed simulation is estimated for its reason (or the gas it needs); without the batch, simulated alone first
          if (await batch) return estimate()
          return client.call({ account: account.address, to: info.usdc, data, gas: SETTLE_GAS_LIMIT }).then(() => SETTLE_GAS_LIMIT, estimate)
        })
        const pending = entry(2).then(r => (r === null ? nonces.pending() : hexToNumber(r)))
        const [isUsed, gas, fee, id, count] = await Promise.all([used, gasLimit, fees(), chainId, pending])
        if (isUsed) return fail('authorization_already_used', 'the authorization was already used or canceled on chain')
        if (id !== info.chainId) return fail('settlement_misconfigured', `the JSON-RPC endpoint of ${network} serves chain ${id}, not ${info.chainId}`)
        // the transaction nonce is taken at the send, so a settlement prepared and then not sent leaves no gap
        const send = async (): Promise<SettleResult> => {
          for (let attempt = 1; ; attempt++) {
            const nonce = nonces.take(attempt === 1 ? count : await nonces.pending())
            try {
              const serialized = await account.signTransaction({ type: 'eip1559', chainId: id, nonce, to: info.usdc, data, gas, ...fee })
              const receipt = await sendAndWait(serialized)
              if (receipt.status !== 'success') return fail('settlement_failed', `transaction ${receipt.transactionHash} reverted`)
              return { ok: true, tx: receipt.transactionHash }
            } catch (error) {
              // the transaction may not be in the pool: the next send reads the nonce from the chain again
              nonces.reset()
              // another process sent with the key and took this nonce first: the chain refused this transaction, so send it again on the next
              if (isNonceTaken(error) && attempt < NONCE_ATTEMPTS) continue
              return classifyChainError(error)
            }
          }
        }
        return { ok: true, send }
      } catch (error) {
        return classifyChainError(error)
      }
    },
  }
}

/** The x402 HTTP facilitator API: POST /verify (prepared), then POST /settle (the send). */
export function httpFacilitator(baseUrl: string): Facilitator {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    })
    const json = (await res.json().catch(() => null)) as Record<string, unknown> | null
    return { status: res.status, json }
  }
  const unreachable = (error: unknown) => fail('facilitator_unavailable', `facilitator unreachable: ${(error as Error).message}`.slice(0, 300))
  return {
    async prepare(req) {
      const body = { x402Version: 1, paymentPayload: req.paymentPayload, paymentRequirements: req.paymentRequirements }
      try {
        if (await req.authorizationUsed()) return fail('authorization_already_used', 'the authorization was already used or canceled on chain')
        const verified = await post('verify', body)
        if (verified.status >= 500) return fail('facilitator_unavailable', `facilitator /verify answered HTTP ${verified.status}`)
        if (verified.json?.isValid !== true) return byReason(String(verified.json?.invalidReason ?? `HTTP ${verified.status}`))
      } catch (error) {
        return unreachable(error)
      }
      const send = async (): Promise<SettleResult> => {
        try {
          const settled = await post('settle', body)
          if (settled.status >= 500) return fail('facilitator_unavailable', `facilitator /settle answered HTTP ${settled.status}`)
          const tx = settled.json?.transaction
          if (settled.json?.success === true && typeof tx === 'string' && /^0x[0-9a-fA-F]{64}$/.test(tx)) return { ok: true, tx: tx as `0x${string}` }
          return byReason(String(settled.json?.errorReason ?? `HTTP ${settled.status}`))
        } catch (error) {
          return unreachable(error)
        }
      }
      return { ok: true, send }
    },
  }
}

function byReason(reason: string): SettleFailed {
  if (/insufficient_funds/.test(reason)) return fail('insufficient_funds', 'the payer does not hold enough of the token')
  if (/nonce|used/.test(reason)) return fail('authorization_already_used', `facilitator: ${reason}`)
  return fail('settlement_failed', `facilitator refused the payment: ${reason}`.slice(0, 300))
}

const facilitators = perProcess(() => new Map<Network, Facilitator>())

/** The configured facilitator of a network, one per process. */
export function facilitatorFor(ctx: AppContext, network: Network, client: PublicClient): Facilitator {
  const perNetwork = facilitators(ctx)
  let f = perNetwork.get(network)
  if (!f) {
    const url = facilitatorUrl(ctx.config, network)
    f = url ? httpFacilitator(url) : rpcFacilitator(ctx.config, network, client)
    perNetwork.set(network, f)
  }
  return f
}
