/**
 * secp256k1 on the payment path, with libsecp256k1 (tiny-secp256k1, compiled to WebAssembly):
 * recovering a payer's address from its signature, and signing the settler's transactions. They
 * were the largest CPU costs of a payment in the service, and take about half the CPU of viem's
 * JavaScript (noble-curves) here, with the same results: both sign deterministically (RFC 6979,
 * low s), and tests compare the two.
 */
import { recover, signRecoverable } from 'tiny-secp256k1'
import { bytesToHex, hexToBytes, keccak256, serializeTransaction, type Hex, type TransactionSerializable } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

/** The address (lowercase) whose key made `signature` (r, s, v as 27/28 or 0/1) over `hash`; null when it does not recover. */
export function recoverAddressOf(hash: Hex, signature: Hex): Hex | null {
  try {
    const sig = hexToBytes(signature)
    const v = sig[64]!
    const recoveryId = v >= 27 ? v - 27 : v
    if (sig.length !== 65 || (recoveryId !== 0 && recoveryId !== 1)) return null
    const publicKey = recover(hexToBytes(hash), sig.subarray(0, 64), recoveryId, false)
    return publicKey ? `0x${keccak256(publicKey.subarray(1)).slice(-40)}` : null
  } catch {
    return null
  }
}

/** viem's local account of `key`, its transactions signed here. */
export function signingAccount(key: Hex) {
  const account = privateKeyToAccount(key)
  const secret = hexToBytes(key)
  return {
    ...account,
    async signTransaction(tx: TransactionSerializable): Promise<Hex> {
      const { signature, recoveryId } = signRecoverable(keccak256(serializeTransaction(tx), 'bytes'), secret)
      return serializeTransaction(tx, { r: bytesToHex(signature.subarray(0, 32)), s: bytesToHex(signature.subarray(32)), yParity: recoveryId })
    },
  }
}
