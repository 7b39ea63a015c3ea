/**
 * The TransferWithAuthorization digest computed by hand in verify.ts is exactly viem's hashTypedData
 * of the same message and domain; the signer verification recovers what viem's recoverAddress
 * does, and the settler's transactions are signed as viem signs them (libsecp256k1 against
 * noble-curves, src/x402/secp256k1.ts).
 */
import { describe, expect, test } from 'bun:test'
import { bytesToHex, encodeFunctionData, getAddress, hashTypedData, hexToBytes, numberToHex, recoverAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { authorizationDigest, verifyPayment } from '../../src/x402/verify'
import { signingAccount } from '../../src/x402/secp256k1'
import { TOKEN_ABI } from '../../src/x402/token'
import type { ChallengeRow } from '../../src/x402/challenge-queries'
import { NETWORKS, networkInfo } from '../../src/x402/networks'
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../src/x402/token'

const address = () => privateKeyToAccount(generatePrivateKey()).address

describe('authorization digest', () => {
  for (const network of NETWORKS) {
    test(`equals hashTypedData over the ${network} USDC domain`, () => {
      const info = networkInfo(network)
      const messages = [
        ...Array.from({ length: 20 }, () => ({
          from: address(),
          to: address(),
          value: BigInt(Math.floor(Math.random() * 1e12)),
          validAfter: 1_700_000_000n,
          validBefore: 1_700_000_900n,
          nonce: generatePrivateKey(),
        })),
        { from: address(), to: address(), value: 2n ** 256n - 1n, validAfter: 0n, validBefore: 2n ** 256n - 1n, nonce: `0x${'0'.repeat(64)}` as Hex },
      ]
      for (const message of messages) {
        const expected = hashTypedData({
          domain: { name: info.eip712.name, version: info.eip712.version, chainId: info.chainId, verifyingContract: info.usdc },
          types: TRANSFER_WITH_AUTHORIZATION_TYPES,
          primaryType: 'TransferWithAuthorization',
          message,
        })
        // the challenge's asset as stored (lowercase or checksummed) gives the same domain
        expect(authorizationDigest(network, info.usdc.toLowerCase() as Hex, message)).toBe(expected)
        expect(authorizationDigest(network, getAddress(info.usdc), message)).toBe(expected)
      }
    })
  }
})

describe('signer recovery', () => {
  const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
  test("agrees with viem's recoverAddress: the signer, high-s signatures, v as 0/1 or 27/28, another signer, garbage", async () => {
    const info = networkInfo('base-sepolia')
    for (let i = 0; i < 10; i++) {
      const payer = privateKeyToAccount(generatePrivateKey())
      const now = BigInt(Math.floor(Date.now() / 1000))
      const challenge = {
        network: 'base-sepolia',
        amount: '1000',
        asset: info.usdc,
        pay_to: address(),
        authorization_nonce: generatePrivateKey(),
      } as unknown as ChallengeRow
      const authorization = {
        from: payer.address,
        to: challenge.pay_to,
        value: 1000n,
        validAfter: now - 600n,
        validBefore: now + 300n,
        nonce: challenge.authorization_nonce,
      }
      const hash = authorizationDigest('base-sepolia', info.usdc, authorization)
      const signature = await payer.sign({ hash })
      const sig = hexToBytes(signature)
      // the same point with s negated and the other recovery id: a valid signature of the same key
      const highS = bytesToHex(
        new Uint8Array([
          ...sig.subarray(0, 32),
          ...hexToBytes(numberToHex(N - BigInt(bytesToHex(sig.subarray(32, 64))), { size: 32 })),
          sig[64] === 27 ? 28 : 27,
        ]),
      )
      const zeroOne = bytesToHex(new Uint8Array([...sig.subarray(0, 64), sig[64]! - 27]))
      const other = await privateKeyToAccount(generatePrivateKey()).sign({ hash })
      const garbage = `0x${'11'.repeat(64)}1b` as Hex
      for (const s of [signature, highS, zeroOne, other, garbage]) {
        const viem = await recoverAddress({ hash, signature: s }).catch(() => null)
        const payment = {
          x402Version: 1,
          scheme: 'exact',
          network: 'base-sepolia',
          payload: {
            signature: s,
            authorization: {
              ...authorization,
              value: '1000',
              validAfter: authorization.validAfter.toString(),
              validBefore: authorization.validBefore.toString(),
            },
          },
        }
        const verified = await verifyPayment(challenge, payment)
        const expected: string[] = viem === null ? ['signature_unrecoverable'] : viem === payer.address ? [] : ['signer_mismatch']
        expect(verified.ok ? [] : (verified.reasons as string[])).toEqual(expected)
      }
    }
  })
})

describe('settler transactions', () => {
  test("are signed exactly as viem's own local account signs them (deterministic signatures, low s)", async () => {
    for (let i = 0; i < 10; i++) {
      const key = generatePrivateKey()
      const tx = {
        type: 'eip1559' as const,
        chainId: 84532,
        nonce: i * 7,
        to: networkInfo('base-sepolia').usdc,
        data: encodeFunctionData({ abi: TOKEN_ABI, functionName: 'authorizationState', args: [address(), generatePrivateKey()] }),
        gas: 150_000n,
        maxFeePerGas: BigInt(1 + i) * 1_000_000_000n,
        maxPriorityFeePerGas: 1_000_000n,
      }
      expect(await signingAccount(key).signTransaction(tx)).toBe(await privateKeyToAccount(key).signTransaction(tx))
    }
  })
})
