/**
 * A payer that signs with the `x402` reference client's own functions: prepare the header from
 * the challenge's requirements, set the nonce to the challenge's `authorization_nonce`, sign.
 * `edit` changes the unsigned authorization before signing (to build bad payments the way a
 * faulty or hostile client would, still signed by the same code).
 */
import type { Hex } from 'viem'
import { preparePaymentHeader, signPaymentHeader } from 'x402/client'
import { decodePayment } from 'x402/schemes'
import { createSigner } from 'x402/types'

export async function signPayment(
  key: Hex,
  challenge: { payment_requirements: any; authorization_nonce: string },
  edit: (authorization: Record<string, string>, requirements: any) => void = () => {},
) {
  const requirements = { ...challenge.payment_requirements }
  const signer = (await createSigner(requirements.network, key)) as any
  const unsigned = preparePaymentHeader(signer.account.address, 1, requirements) as any
  unsigned.payload.authorization.nonce = challenge.authorization_nonce
  edit(unsigned.payload.authorization, requirements)
  return decodePayment(await signPaymentHeader(signer, requirements, unsigned)) as any
}
