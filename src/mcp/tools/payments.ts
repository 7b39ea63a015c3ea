/**
 * x402 payment tools (the x402 routes), behind the same x402_payments entitlement: challenges
 * (the payee's side), paying one (the payer's side, under its spend policy), the spend policy
 * itself and the books (the ledger and the payments the policy declined).
 */
import { Type } from '@sinclair/typebox'
import { requireOwnerOrAdmin } from '../../account/roles'
import { idempotent } from '../../http/idempotency'
import { OneOf } from '../../http/schema'
import { parseTimestamp } from '../../http/timestamps'
import { requireX402 } from '../../x402/access'
import { createChallenge, getOwnChallenge, presentChallenge } from '../../x402/challenges.service'
import { listDeclined, listLedger, presentDeclined, presentLedgerRow } from '../../x402/ledger.service'
import {
  Challenge,
  DeclinedPayment,
  DIRECTIONS,
  LEDGER_STATUSES,
  LedgerRow,
  NetworkSchema,
  NewChallengeBody,
  PaymentPayload,
  Receipt,
  SpendPolicy,
  SpendPolicyUpdate,
} from '../../x402/model'
import { payChallenge } from '../../x402/pay.service'
import { getSpendPolicy, presentPolicy, updateSpendPolicy } from '../../x402/policy.service'
import { PageInput, PageOf, toolPage } from '../schema'
import { READ, tool, WRITE } from '../tool'

const ChallengeId = Type.String({ format: 'uuid' })
const Instant = (description: string) => Type.Optional(Type.String({ description: `ISO 8601 instant with Z or an offset; ${description}` }))

export const paymentTools = [
  tool({
    name: 'create_payment_challenge',
    title: 'Create a payment challenge',
    description:
      'Asks for a USDC payment (x402): returns the payment requirements a payer signs an EIP-3009 authorization against. ' +
      'amount is in base units (USDC has 6 decimals: 10000 = 0.01 USDC). Needs the x402_payments entitlement and a payout address for the network.',
    input: Type.Object({
      ...NewChallengeBody.properties,
      idempotency_key: Type.String({ minLength: 1, maxLength: 255, description: 'required: a retry with the same key returns the first challenge' }),
    }),
    output: Challenge,
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'POST', path: '/v1/x402/challenges' },
    handle: async ({ ctx, auth }, { idempotency_key, ...body }) => {
      await requireX402(ctx, auth.orgId)
      const interactionDomain = new URL(ctx.config.PUBLIC_URL).hostname
      const outcome = await idempotent(ctx.sql, ctx.keys, { scope: `org:${auth.orgId}:x402.challenges`, key: idempotency_key, payload: body }, async tx => ({
        status: 201,
        data: presentChallenge(await createChallenge(tx, auth.orgId, body, interactionDomain, { commitWithoutFlush: true }), ctx.config.PUBLIC_URL),
      }))
      return outcome.data
    },
  }),
  tool({
    name: 'get_payment_challenge',
    title: 'Get a payment challenge',
    description: 'One of your challenges: pending, settled (with settle_tx) or failed (with failure_reason).',
    input: Type.Object({ challenge_id: ChallengeId }),
    output: Challenge,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/x402/challenges/:id' },
    handle: async ({ ctx, auth }, args) => {
      await requireX402(ctx, auth.orgId)
      return presentChallenge(await getOwnChallenge(ctx.sql, auth.orgId, args.challenge_id), ctx.config.PUBLIC_URL)
    },
  }),
  tool({
    name: 'pay_payment_challenge',
    title: 'Pay a payment challenge',
    description:
      "Pays another organization's challenge with a signed x402 v1 payment (an EIP-3009 authorization of exactly the amount to pay_to, nonce = the challenge's authorization_nonce). " +
      'Your spend policy applies (payment_declined, the challenge stays pending); settled on chain before the receipt comes back. ' +
      'Paying a settled challenge again returns its original receipt and moves nothing.',
    input: Type.Object({
      challenge_id: ChallengeId,
      // any JSON is taken, as by the REST route: a payload of the wrong shape is malformed_payload, not validation_error
      payment: Type.Union([PaymentPayload, Type.Unknown()], { description: 'the x402 v1 payment payload (the decoded X-PAYMENT header)' }),
    }),
    output: Receipt,
    annotations: { ...WRITE, idempotentHint: true, openWorldHint: true },
    rest: { method: 'POST', path: '/v1/x402/challenges/:id/pay' },
    handle: async ({ ctx, auth }, args) => {
      await requireX402(ctx, auth.orgId)
      return payChallenge(ctx, { challengeId: args.challenge_id, payerOrg: auth.orgId, payment: args.payment })
    },
  }),
  tool({
    name: 'get_spend_policy',
    title: 'Get the spend policy',
    description:
      'What this organization may pay: paused (every payment declined), per_payment_cap, daily_cap (base units, per UTC day) and payee_allowlist; null means no limit.',
    input: Type.Object({}),
    output: SpendPolicy,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/x402/spend-policy' },
    handle: async ({ ctx, auth }) => {
      await requireX402(ctx, auth.orgId)
      return presentPolicy(await getSpendPolicy(ctx.sql, auth.orgId))
    },
  }),
  tool({
    name: 'update_spend_policy',
    title: 'Update the spend policy',
    description: 'Owner or admin credentials only. An omitted field keeps its value; null clears a cap or the allowlist. paused: true is the kill switch.',
    input: SpendPolicyUpdate,
    output: SpendPolicy,
    annotations: { ...WRITE, idempotentHint: true },
    rest: { method: 'PUT', path: '/v1/x402/spend-policy' },
    handle: async ({ ctx, auth }, args) => {
      await requireX402(ctx, auth.orgId)
      await requireOwnerOrAdmin(ctx.sql, auth, 'x402.spend-policy')
      return presentPolicy(await updateSpendPolicy(ctx.sql, auth.orgId, args))
    },
  }),
  tool({
    name: 'list_payments',
    title: 'List payments',
    description: 'The payments ledger, newest first: received rows (you were paid) and sent rows (you paid), with status, amount, counterparty and settle_tx.',
    input: Type.Object({
      ...PageInput,
      status: Type.Optional(OneOf(LEDGER_STATUSES)),
      direction: Type.Optional(OneOf(DIRECTIONS)),
      network: Type.Optional(NetworkSchema),
      created_after: Instant('rows created at or after it'),
      created_before: Instant('rows created at or before it'),
    }),
    output: PageOf(LedgerRow),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/x402/payments' },
    handle: async ({ ctx, auth }, args) => {
      await requireX402(ctx, auth.orgId)
      const filters = {
        status: args.status,
        direction: args.direction,
        network: args.network,
        createdAfter: args.created_after ? parseTimestamp('created_after', args.created_after) : null,
        createdBefore: args.created_before ? parseTimestamp('created_before', args.created_before) : null,
      }
      return toolPage(ctx, 'x402-ledger', args, page => listLedger(ctx.sql, auth.orgId, page, filters), presentLedgerRow)
    },
  }),
  tool({
    name: 'list_declined_payments',
    title: 'List declined payments',
    description: 'Payments your spend policy refused, newest first, with the reasons (paused, per_payment_cap, daily_cap, allowlist).',
    input: Type.Object(PageInput),
    output: PageOf(DeclinedPayment),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/x402/declined-payments' },
    handle: async ({ ctx, auth }, args) => {
      await requireX402(ctx, auth.orgId)
      return toolPage(ctx, 'x402-declined', args, page => listDeclined(ctx.sql, auth.orgId, page), presentDeclined)
    },
  }),
]
