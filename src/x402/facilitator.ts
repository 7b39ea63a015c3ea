/**
 * Facilitators settle a verified payment on chain. Configuration picks one per network:
 * the x402 HTTP facilitator API (`/verify`, `/settle`, `/supported`) when
 * X402_FACILITATOR_URL_<NETWORK> is set, otherwise a direct JSON-RPC settler that calls the
 * token's `transferWithAuthorization` itself with viem, paying gas from X402_SETTLER_PRIVATE_KEY.
 * Our own verification has run before either is called; their failures are classified into the
 * spec's settlement reasons.
 */
import { BaseError, ContractFunctionRevertedError, createNonceManager, createWalletClient, http, parseSignature, type Hex, type PublicClient } from 'viem'
import { jsonRpc } from 'viem/nonce'
import { privateKeyToAccount } from 'viem/accounts'
import type { Config } from '../config'
import { perProcess, type AppContext } from '../context'
import { networkInfo, type Network } from './networks'
import { TOKEN_ABI, type Authorization } from './token'

export type SettlementFailure = 'insufficient_funds' | 'facilitator_unavailable' | 'settlement_misconfigured' | 'settlement_failed' | 'authorization_already_used'

export type SettleResult = { ok: true; tx: `0x${string}` } | { ok: false; reason: SettlementFailure; message: string }

export interface SettleRequest {
  network: Network
  authorization: Authorization
  signature: Hex
  /** the x402 v1 payment payload and requirements, as the HTTP facilitator API takes them */
  paymentPayload: unknown
  paymentRequirements: unknown
}

export interface Facilitator {
  settle(req: SettleRequest): Promise<SettleResult>
}

export function facilitatorUrl(config: Config, network: Network): string | undefined {
  return network === 'base' ? config.X402_FACILITATOR_URL_BASE : config.X402_FACILITATOR_URL_BASE_SEPOLIA
}

const fail = (reason: SettlementFailure, message: string): SettleResult => ({ ok: false, reason, message })

/** What a viem error from a simulation or a send means for the settlement. */
export function classifyChainError(error: unknown): SettleResult {
  const message = error instanceof BaseError ? error.shortMessage : String((error as Error)?.message ?? error)
  const revert = error instanceof BaseError ? (error.walk(e => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null) : null
  const reason = revert?.reason ?? message
  if (/exceeds balance/i.test(reason)) return fail('insufficient_funds', 'the payer does not hold enough of the token')
  if (/authorization is used|used or canceled/i.test(reason)) return fail('authorization_already_used', 'the authorization was already used or canceled on chain')
  if (/insufficient funds for gas|insufficient funds for transfer|gas required exceeds/i.test(message)) return fail('settlement_misconfigured', 'the settler account cannot pay for gas')
  const text = `${message} ${(error as Error)?.name ?? ''}`
  if (/HTTP request failed|fetch failed|ECONNREFUSED|Unable to connect|timed? ?out|TimeoutError|socket/i.test(text)) return fail('facilitator_unavailable', 'the chain RPC endpoint did not answer')
  return fail('settlement_failed', `settlement did not complete: ${reason}`.slice(0, 300))
}

/** Sends `transferWithAuthorization` itself: simulate, send, wait for the receipt. */
export function rpcFacilitator(config: Config, network: Network, client: PublicClient, url: string): Facilitator {
  const key = config.X402_SETTLER_PRIVATE_KEY
  // Concurrent settlements from one key need distinct transaction nonces: a nonce manager of this
  // facilitator hands them out (viem resets it when a send fails). Several processes settling with
  // one key would still collide: give each its own key, or use an HTTP facilitator.
  const account = key ? privateKeyToAccount(key as Hex, { nonceManager: createNonceManager({ source: jsonRpc() }) }) : null
  const wallet = account ? createWalletClient({ account, transport: http(url, { retryCount: 0, timeout: 15_000 }) }) : null
  return {
    async settle(req) {
      if (!account || !wallet) return fail('settlement_misconfigured', 'no settler key is configured (X402_SETTLER_PRIVATE_KEY)')
      const a = req.authorization
      const { v, r, s, yParity } = parseSignature(req.signature)
      const args = [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v ?? BigInt(yParity + 27)), r, s] as const
      try {
        const { request } = await client.simulateContract({ account, address: networkInfo(network).usdc, abi: TOKEN_ABI, functionName: 'transferWithAuthorization', args })
        // chain null: the chain id is read from the RPC endpoint when signing
        const hash = await wallet.writeContract({ ...request, chain: null })
        // polled every 250 ms (viem's default is 4 s, longer than a block on base)
        const receipt = await client.waitForTransactionReceipt({ hash, timeout: 120_000, pollingInterval: 250 })
        if (receipt.status !== 'success') return fail('settlement_failed', `transaction ${hash} reverted`)
        return { ok: true, tx: hash }
      } catch (error) {
        return classifyChainError(error)
      }
    },
  }
}

/** The x402 HTTP facilitator API: POST /verify, then POST /settle. */
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
  return {
    async settle(req) {
      const body = { x402Version: 1, paymentPayload: req.paymentPayload, paymentRequirements: req.paymentRequirements }
      try {
        const verified = await post('verify', body)
        if (verified.status >= 500) return fail('facilitator_unavailable', `facilitator /verify answered HTTP ${verified.status}`)
        if (verified.json?.isValid !== true) return byReason(String(verified.json?.invalidReason ?? `HTTP ${verified.status}`))
        const settled = await post('settle', body)
        if (settled.status >= 500) return fail('facilitator_unavailable', `facilitator /settle answered HTTP ${settled.status}`)
        const tx = settled.json?.transaction
        if (settled.json?.success === true && typeof tx === 'string' && /^0x[0-9a-fA-F]{64}$/.test(tx)) return { ok: true, tx: tx as `0x${string}` }
        return byReason(String(settled.json?.errorReason ?? `HTTP ${settled.status}`))
      } catch (error) {
        return fail('facilitator_unavailable', `facilitator unreachable: ${(error as Error).message}`.slice(0, 300))
      }
    },
  }
}

function byReason(reason: string): SettleResult {
  if (/insufficient_funds/.test(reason)) return fail('insufficient_funds', 'the payer does not hold enough of the token')
  if (/nonce|used/.test(reason)) return fail('authorization_already_used', `facilitator: ${reason}`)
  return fail('settlement_failed', `facilitator refused the payment: ${reason}`.slice(0, 300))
}

const facilitators = perProcess(() => new Map<Network, Facilitator>())

/** The configured facilitator of a network, one per process. */
export function facilitatorFor(ctx: AppContext, network: Network, client: PublicClient, rpc: string): Facilitator {
  const perNetwork = facilitators(ctx)
  let f = perNetwork.get(network)
  if (!f) {
    const url = facilitatorUrl(ctx.config, network)
    f = url ? httpFacilitator(url) : rpcFacilitator(ctx.config, network, client, rpc)
    perNetwork.set(network, f)
  }
  return f
}
