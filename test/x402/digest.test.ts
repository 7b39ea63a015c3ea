/** The TransferWithAuthorization digest computed by hand in verify.ts is exactly viem's hashTypedData of the same message and domain. */
import { describe, expect, test } from 'bun:test'
import { getAddress, hashTypedData, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { authorizationDigest } from '../../src/x402/verify'
import { NETWORKS, networkInfo } from '../../src/x402/networks'
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from '../../src/x402/token'

const address = () => privateKeyToAccount(generatePrivateKey()).address

describe('authorization digest', () => {
  for (const network of NETWORKS) {
    test(`equals hashTypedData over the ${network} USDC domain`, () => {
      const info = networkInfo(network)
      const messages = [
        ...Array.from({ length: 20 }, () => ({ from: address(), to: address(), value: BigInt(Math.floor(Math.random() * 1e12)), validAfter: 1_700_000_000n, validBefore: 1_700_000_900n, nonce: generatePrivateKey() })),
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
