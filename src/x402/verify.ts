/**
 * Verification of a signed payment against the stored challenge, and only against it: the
 * payee, amount, network, asset and nonce the signature must cover are the challenge's, never
 * requirements a client echoes back. Every reason that applies is reported, not just the first.
 */
import { concat, encodeAbiParameters, getAddress, hashDomain, isAddress, keccak256, toHex, type Hex } from 'viem'
import { recoverAddressOf } from './secp256k1'
import type { ChallengeRow } from './challenge-queries'
import { isNetwork, networkInfo, type Network } from './networks'
import type { Authorization } from './token'

/** The authorization window: at most 24 h wide, at least 60 s left at settlement. */
export const MAX_WINDOW_SECONDS = 86_400
export const MIN_HEADROOM_SECONDS = 60

export type VerificationReason =
  | 'signature_unrecoverable'
  | 'signer_mismatch'
  | 'invalid_from_address'
  | 'invalid_to_address'
  | 'payer_mismatch'
  | 'payto_mismatch'
  | 'self_send'
  | 'amount_mismatch'
  | 'verify_non_positive_amount'
  | 'nonce_mismatch'
  | 'degenerate_window'
  | 'window_too_wide'
  | 'insufficient_headroom'
  | 'not_yet_valid'
  | 'malformed_payload'
  | 'unsupported_network'

export interface VerifyOptions {
  now?: Date
  /**
   * The stock-client path (`GET /x402/pay/{id}`): any nonce is accepted (the claim on
   * (chain, asset, from, nonce) still holds) and the 24 h rule is measured from now, since v2
   * clients sign validAfter 0.
   */
  anyNonce?: boolean
  /**
   * The payer whose authorization the challenge is already claimed with (lowercase address), if
   * any: only that payer's authorization can still settle it, so another `from` is payer_mismatch.
   */
  claimedPayer?: string | null
  /** the payload's signer, recovered while the challenge was read (`recoverSigner`) */
  signer?: Promise<EarlySigner | null>
}

export type Verified = { ok: true; authorization: Authorization; signature: Hex } | { ok: false; reasons: VerificationReason[] }

/**
 * The EIP-712 digest of a TransferWithAuthorization, as viem's `hashTypedData` computes it (a
 * test checks they agree), in a tenth of its time: the type hash and each token's domain
 * separator are computed once, leaving two keccaks over 256 bytes per payment.
 */
const TYPE_HASH = keccak256(toHex('TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)'))
const STRUCT = [
  { type: 'bytes32' },
  { type: 'address' },
  { type: 'address' },
  { type: 'uint256' },
  { type: 'uint256' },
  { type: 'uint256' },
  { type: 'bytes32' },
] as const
const DOMAIN_TYPES = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
} as const
const domainSeparators = new Map<string, Hex>()

export function authorizationDigest(network: Network, token: Hex, a: Authorization): Hex {
  const info = networkInfo(network)
  const key = `${network}:${token}`
  let separator = domainSeparators.get(key)
  if (!separator) {
    separator = hashDomain({
      domain: { name: info.eip712.name, version: info.eip712.version, chainId: BigInt(info.chainId), verifyingContract: getAddress(token) },
      types: DOMAIN_TYPES,
    })
    domainSeparators.set(key, separator)
  }
  const struct = keccak256(encodeAbiParameters(STRUCT, [TYPE_HASH, a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce]))
  return keccak256(concat(['0x1901', separator, struct]))
}

const UINT = /^(0|[1-9][0-9]{0,77})$/
const BYTES32 = /^0x[0-9a-fA-F]{64}$/

type Payload = { x402Version?: unknown; scheme?: unknown; network?: unknown; payload?: { signature?: unknown; authorization?: Record<string, unknown> } } | null

/** What a payload says, read without the challenge: its authorization, and the reasons its own shape gives. */
type Parsed =
  | { ok: false; network?: unknown; reasons: VerificationReason[] }
  | { ok: true; network: unknown; auth: Authorization; signature: Hex; fromOk: boolean; toOk: boolean; reasons: VerificationReason[] }

function parsePayload(payment: unknown): Parsed {
  const reasons = new Set<VerificationReason>()
  const p = payment as Payload
  const a = p?.payload?.authorization
  const sig = p?.payload?.signature
  if (!p || typeof p !== 'object' || p.x402Version !== 1 || p.scheme !== 'exact' || !a || typeof a !== 'object')
    return { ok: false, reasons: ['malformed_payload'] }
  const str = (v: unknown) => (typeof v === 'string' ? v : '')
  if (typeof sig !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(sig)) reasons.add('malformed_payload')
  for (const field of ['value', 'validAfter', 'validBefore'] as const) if (!UINT.test(str(a[field]))) reasons.add('malformed_payload')
  if (!BYTES32.test(str(a.nonce))) reasons.add('malformed_payload')
  const fromOk = isAddress(str(a.from), { strict: false })
  const toOk = isAddress(str(a.to), { strict: false })
  if (!fromOk) reasons.add('invalid_from_address')
  if (!toOk) reasons.add('invalid_to_address')
  if (reasons.has('malformed_payload')) return { ok: false, network: p.network, reasons: [...reasons] }
  const auth: Authorization = {
    from: fromOk ? getAddress(str(a.from)) : '0x0000000000000000000000000000000000000000',
    to: toOk ? getAddress(str(a.to)) : '0x0000000000000000000000000000000000000000',
    value: BigInt(str(a.value)),
    validAfter: BigInt(str(a.validAfter)),
    validBefore: BigInt(str(a.validBefore)),
    nonce: str(a.nonce).toLowerCase() as Hex,
  }
  return { ok: true, network: p.network, auth, signature: sig as Hex, fromOk, toOk, reasons: [...reasons] }
}

/**
 * The signer of an authorization over a token's EIP-712 domain (lowercase); null when the
 * signature does not recover, or the authorization cannot be hashed (a number past uint256).
 */
function signerOver(network: Network, token: Hex, auth: Authorization, signature: Hex): Hex | null {
  try {
    return recoverAddressOf(authorizationDigest(network, token, auth), signature)
  } catch {
    return null
  }
}

/** A signer recovered ahead of the challenge (`recoverSigner`), and the domain it was recovered over. */
export interface EarlySigner {
  network: Network
  token: Hex
  signer: Hex | null
}

/**
 * Recovers the payload's signer over the domain of the network the payload names, while the
 * challenge is being read: the recovery is most of verification's CPU, and the challenge's network
 * must be that one for the payment to verify anyway (`verifyPayment` uses the result only then).
 * It first yields a macrotask, so statements started before it are on the wire (postgres.js
 * writes them out at the next macrotask) while the CPU works. Never rejects; null when the payload
 * cannot be recovered over a network of ours.
 */
export async function recoverSigner(payment: unknown): Promise<EarlySigner | null> {
  await new Promise(resolve => setImmediate(resolve))
  const parsed = parsePayload(payment)
  if (!parsed.ok || !parsed.fromOk || !parsed.toOk || !isNetwork(parsed.network)) return null
  const token = networkInfo(parsed.network).usdc
  return { network: parsed.network, token, signer: signerOver(parsed.network, token, parsed.auth, parsed.signature) }
}

/** Checks the x402 v1 payment payload (`{x402Version, scheme, network, payload {signature, authorization}}`) against the challenge. */
export async function verifyPayment(challenge: ChallengeRow, payment: unknown, opts: VerifyOptions = {}): Promise<Verified> {
  const parsed = parsePayload(payment)
  const reasons = new Set<VerificationReason>()
  // a payload of the wrong structure is malformed, and nothing else is said of it
  if ('network' in parsed && (!isNetwork(parsed.network) || parsed.network !== challenge.network)) reasons.add('unsupported_network')
  for (const reason of parsed.reasons) reasons.add(reason)
  if (!parsed.ok) return { ok: false, reasons: [...reasons] }
  const { auth, fromOk, toOk } = parsed
  if (fromOk && opts.claimedPayer && auth.from.toLowerCase() !== opts.claimedPayer.toLowerCase()) reasons.add('payer_mismatch')
  if (toOk && auth.to !== getAddress(challenge.pay_to)) reasons.add('payto_mismatch')
  if (fromOk && toOk && auth.from === auth.to) reasons.add('self_send')
  if (auth.value <= 0n) reasons.add('verify_non_positive_amount')
  else if (auth.value !== BigInt(challenge.amount)) reasons.add('amount_mismatch')
  if (!opts.anyNonce && auth.nonce !== challenge.authorization_nonce.toLowerCase()) reasons.add('nonce_mismatch')
  const now = BigInt(Math.floor((opts.now ?? new Date()).getTime() / 1000))
  if (auth.validBefore <= auth.validAfter) reasons.add('degenerate_window')
  else if ((opts.anyNonce ? auth.validBefore - now : auth.validBefore - auth.validAfter) > BigInt(MAX_WINDOW_SECONDS)) reasons.add('window_too_wide')
  if (auth.validBefore - now < BigInt(MIN_HEADROOM_SECONDS)) reasons.add('insufficient_headroom')
  if (auth.validAfter > now) reasons.add('not_yet_valid')

  // The signature is checked over the challenge's own domain: the network's canonical USDC, its real EIP-712 name.
  if (fromOk && toOk) {
    const early = await opts.signer
    const signer =
      early && early.network === challenge.network && early.token === challenge.asset
        ? early.signer
        : signerOver(challenge.network, challenge.asset, auth, parsed.signature)
    if (signer === null) reasons.add('signature_unrecoverable')
    else if (signer !== auth.from.toLowerCase()) reasons.add('signer_mismatch')
  }
  return reasons.size ? { ok: false, reasons: [...reasons] } : { ok: true, authorization: auth, signature: parsed.signature }
}
