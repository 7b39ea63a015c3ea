/**
 * `GET /x402/pay/{challenge_id}`: any stock x402 client can pay a challenge, with no account
 * here. Without a payment it answers `402` with the challenge's requirements, as the v1 JSON
 * body and as the v2 `PAYMENT-REQUIRED` header (CAIP-2 network ids). The retry carrying
 * `X-PAYMENT` (v1) or `PAYMENT-SIGNATURE` (v2) goes through the same verification and
 * settlement as `POST /v1/x402/challenges/{id}/pay` and answers `200` with `X-PAYMENT-RESPONSE`
 * or `PAYMENT-RESPONSE`. Stock clients draw a random nonce and (v2) sign `validAfter: 0`, so on
 * this path only any nonce is accepted (the claim on (chain, asset, from, nonce) and the
 * challenge's single settlement still hold) and the 24 h rule is measured from now.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { publicAccess } from '../http/auth'
import { Bare, Ok } from '../http/envelope'
import { errors } from '../errors'
import { planAccess } from '../account/access'
import { paymentRequirements, payUrl } from './challenges.service'
import { findChallenge, type ChallengeRow } from './challenge-queries'
import { PaymentRequirements, Receipt } from './model'
import { networkInfo, networkOfCaip2 } from './networks'
import { expiredError, payChallenge, type Receipt as ReceiptData } from './pay.service'

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64')

// biome-ignore lint/suspicious/noExplicitAny: an x402 header is client JSON, checked where it is read
function decodeHeader(name: string, value: string): any {
  try {
    const parsed = JSON.parse(Buffer.from(value, 'base64').toString('utf8'))
    if (parsed && typeof parsed === 'object') return parsed
  } catch {}
  throw errors.validation(name, 'must be base64-encoded JSON')
}

function v1Requirements(c: ChallengeRow) {
  return paymentRequirements(c)
}

function v2Requirements(c: ChallengeRow) {
  const r = paymentRequirements(c)
  return {
    scheme: r.scheme,
    network: networkInfo(c.network).caip2,
    amount: r.maxAmountRequired,
    asset: r.asset,
    payTo: r.payTo,
    maxTimeoutSeconds: r.maxTimeoutSeconds,
    extra: r.extra,
  }
}

/** A v2 payload (`{x402Version: 2, accepted, payload}`) as the v1 payload the service verifies. */
// biome-ignore lint/suspicious/noExplicitAny: an x402 v2 payload as the client sent it
function fromV2(p: any) {
  const network = typeof p?.accepted?.network === 'string' ? (networkOfCaip2(p.accepted.network) ?? p.accepted.network) : undefined
  return { x402Version: 1, scheme: p?.accepted?.scheme, network, payload: p?.payload }
}

export function stockClientRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/x402/pay', tags: ['x402 payments'] }).use(publicAccess(ctx)).get(
    '/:challenge_id',
    async ({ params, request }): Promise<ReceiptData> => {
      const challenge = await findChallenge(ctx.sql, params.challenge_id)
      // A payee that lost the entitlement no longer takes payments here.
      if (!challenge || !(await planAccess(ctx.sql, challenge.org_id)).entitlements.includes('x402_payments')) throw errors.notFound('challenge')
      const v1 = request.headers.get('x-payment')
      const v2 = request.headers.get('payment-signature')
      if (v1 || v2) {
        const payment = v2 ? fromV2(decodeHeader('PAYMENT-SIGNATURE', v2)) : decodeHeader('X-PAYMENT', v1!)
        const receipt = await payChallenge(ctx, { challengeId: challenge.id, payerOrg: null, payment, verify: { anyNonce: true } })
        const settle = {
          success: true,
          transaction: receipt.settle_tx,
          network: v2 ? networkInfo(receipt.network).caip2 : receipt.network,
          payer: receipt.payer,
        }
        return new Response(JSON.stringify({ success: true, data: receipt }), {
          headers: {
            'content-type': 'application/json',
            [v2 ? 'payment-response' : 'x-payment-response']: b64(settle),
            'access-control-expose-headers': 'X-PAYMENT-RESPONSE, PAYMENT-RESPONSE',
          },
        }) as never
      }
      if (challenge.status === 'settled') return payChallenge(ctx, { challengeId: challenge.id, payerOrg: null, payment: null })
      if (challenge.status === 'pending' && challenge.expires_at.getTime() <= Date.now()) throw expiredError()
      const error = 'X-PAYMENT or PAYMENT-SIGNATURE header is required'
      const resource = { url: payUrl(ctx.config.PUBLIC_URL, challenge.id), description: challenge.description, mimeType: 'application/json' }
      return new Response(JSON.stringify({ x402Version: 1, error, accepts: [v1Requirements(challenge)] }), {
        status: 402,
        headers: {
          'content-type': 'application/json',
          'payment-required': b64({ x402Version: 2, error, resource, accepts: [v2Requirements(challenge)] }),
          'access-control-expose-headers': 'PAYMENT-REQUIRED',
        },
      }) as never
    },
    {
      params: t.Object({ challenge_id: t.String({ format: 'uuid' }) }),
      response: {
        200: Ok(Receipt),
        402: Bare(
          t.Object(
            { x402Version: t.Literal(1), error: t.String(), accepts: t.Array(PaymentRequirements) },
            {
              description:
                'x402 v1 body; the same requirements are in the v2 PAYMENT-REQUIRED header (base64 JSON, CAIP-2 networks such as eip155:84532, `amount`)',
            },
          ),
        ),
      },
      detail: {
        summary: 'Pay a challenge with any x402 client (public)',
        security: [],
        description:
          'No credentials: an agent holding a wallet and this link can pay. Without a payment header: 402 with the requirements (v1 body, v2 PAYMENT-REQUIRED header). ' +
          'With X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2): verified and settled like POST /v1/x402/challenges/{id}/pay, then 200 with the receipt and X-PAYMENT-RESPONSE or PAYMENT-RESPONSE. ' +
          'On this path only any nonce is accepted and the 24 h window rule is measured from now (stock clients draw random nonces; v2 clients sign validAfter 0); every other check stands. ' +
          'A settled challenge answers 200 with its receipt; failures use the error envelope and codes of the pay operation.',
      },
    },
  )
}
