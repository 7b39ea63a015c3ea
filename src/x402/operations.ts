/**
 * x402 payments, declared once for REST, MCP and GraphQL (src/http/operation.ts): the payout
 * addresses (REST only), a challenge (the payee's side), paying one (the payer's side, under its
 * spend policy), the spend policy itself, the payments it declined and the ledger. Every one
 * needs the x402_payments entitlement (403 feature_disabled), checked before anything else, as
 * on every /v1/x402 route (access.ts).
 *
 * Creating a challenge is idempotent: REST takes an optional Idempotency-Key header (a retry
 * replays the original answer), MCP requires idempotency_key.
 */
import { t } from 'elysia'
import { requireOwnerOrAdmin } from '../account/roles'
import type { Sql, Tx } from '../db/client'
import { idempotent } from '../http/idempotency'
import { listOperation, operation, type OperationCall } from '../http/operation'
import { IdParam, OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { requireX402 } from './access'
import { createChallenge, getOwnChallenge, presentChallenge, type NewChallenge } from './challenges.service'
import { ledgerCsv, listDeclined, listLedger, presentDeclined, presentLedgerRow, type LedgerFilters } from './ledger.service'
import {
  Address,
  Challenge,
  DeclinedPayment,
  DIRECTIONS,
  LEDGER_STATUSES,
  LedgerRow,
  NetworkSchema,
  NewChallengeBody,
  PaymentPayload,
  PayoutAddress,
  Receipt,
  SpendPolicy,
  SpendPolicyUpdate,
} from './model'
import { payChallenge, rememberChallenge } from './pay.service'
import { checkAddress, listPayoutAddresses, payoutStatement, presentPayout, registerPayoutAddress, STATEMENT_MAX_AGE_SECONDS } from './payout.service'
import { getSpendPolicy, presentPolicy, updateSpendPolicy } from './policy.service'

const TAG = 'x402 payments'
const entitled = ({ ctx, auth }: OperationCall) => requireX402(ctx, auth.orgId)

interface LedgerArgs {
  status?: string
  direction?: string
  network?: string
  created_after?: string
  created_before?: string
}

const STATEMENT_DOC =
  'The statement is five lines joined by "\\n", without a trailing newline:\n\n' +
  '```\nRegister x402 payout address\norganization: <org_id>\nnetwork: <base|base-sepolia>\naddress: <EIP-55 checksummed address>\nissued_at: <ISO 8601 UTC with milliseconds, e.g. 2026-01-01T12:00:00.000Z>\n```\n\n' +
  'signed with personal_sign (EIP-191) by the key of `address`, at most 10 minutes before registration.'

const ledgerFilters = (args: LedgerArgs): LedgerFilters => ({
  status: args.status,
  direction: args.direction,
  network: args.network,
  createdAfter: args.created_after ? parseTimestamp('created_after', args.created_after) : null,
  createdBefore: args.created_before ? parseTimestamp('created_before', args.created_before) : null,
})

/**
 * A new challenge, once per Idempotency-Key: a retry with the key answers the first challenge
 * (REST says so in `Idempotent-Replayed`); without a key it is one statement, no transaction.
 */
async function createChallengeOnce(call: OperationCall, body: NewChallenge) {
  const { ctx, auth, idempotencyKey: key } = call
  const interactionDomain = new URL(ctx.config.PUBLIC_URL).hostname
  const create = async (sql: Sql | Tx) => {
    const challenge = await createChallenge(sql, auth.orgId, body, interactionDomain, { commitWithoutFlush: true })
    // kept for its payment, which then needs no read of it (pay.service.ts)
    rememberChallenge(ctx, challenge)
    return presentChallenge(challenge, ctx.config.PUBLIC_URL)
  }
  if (!key) return create(ctx.sql)
  const outcome = await idempotent(ctx.sql, ctx.keys, { scope: `org:${auth.orgId}:x402.challenges`, key, payload: body }, async tx => ({
    status: 201,
    data: await create(tx),
  }))
  call.header?.('idempotency-key', key)
  if (outcome.replayed) call.header?.('idempotent-replayed', 'true')
  return outcome.data
}

/** Where challenges are paid to: no MCP tools or GraphQL fields, as before. */
export const payoutOperations = [
  operation({
    name: 'list_payout_addresses',
    method: 'GET',
    path: '/v1/x402/payout-addresses',
    tag: TAG,
    summary: 'List payout addresses',
    description: 'Any member. Needs x402_payments (403 feature_disabled).',
    output: t.Array(PayoutAddress),
    guard: entitled,
    mcp: false,
    handle: async ({ ctx, auth }) => (await listPayoutAddresses(ctx.sql, auth.orgId)).map(presentPayout),
  }),
  operation({
    name: 'get_payout_statement',
    method: 'GET',
    path: '/v1/x402/payout-addresses/message',
    tag: TAG,
    summary: 'The statement to sign for a payout address',
    description: `Ready to sign; any member may fetch it. ${STATEMENT_DOC}`,
    input: t.Object({ network: NetworkSchema, address: Address }),
    output: t.Object({
      message: t.String({ description: 'the exact statement to sign with personal_sign (EIP-191)' }),
      issued_at: t.String({ format: 'date-time' }),
      expires_at: t.String({ format: 'date-time', description: 'the statement is refused after this (10 minutes)' }),
    }),
    guard: entitled,
    mcp: false,
    async handle({ auth }, { network, address }) {
      const issuedAt = new Date()
      return {
        message: payoutStatement(auth.orgId, network, checkAddress('address', address), issuedAt),
        issued_at: issuedAt.toISOString(),
        expires_at: new Date(issuedAt.getTime() + STATEMENT_MAX_AGE_SECONDS * 1000).toISOString(),
      }
    },
  }),
  operation({
    name: 'register_payout_address',
    method: 'POST',
    path: '/v1/x402/payout-addresses',
    tag: TAG,
    summary: 'Register a payout address',
    description:
      'Owner or admin (the current role of the person who created the credential; a key of a member or without a creator is 403 forbidden). ' +
      'The recovered signer must equal `address`; the address becomes the default of its network (registering a known address again makes it the default). ' +
      STATEMENT_DOC,
    input: t.Object({
      network: NetworkSchema,
      address: Address,
      message: t.String({ maxLength: 1000, description: 'the signed statement' }),
      signature: t.String({ maxLength: 200, description: '65-byte hex EIP-191 signature of message' }),
    }),
    output: PayoutAddress,
    status: 201,
    guard: entitled,
    mcp: false,
    async handle({ ctx, auth }, body) {
      await requireOwnerOrAdmin(ctx.sql, auth, 'x402.payout-addresses')
      return presentPayout(await registerPayoutAddress(ctx.sql, auth.orgId, body))
    },
  }),
]

export const paymentOperations = [
  operation({
    name: 'create_payment_challenge',
    method: 'POST',
    path: '/v1/x402/challenges',
    tag: TAG,
    summary: 'Create a payment challenge',
    description:
      'Accepts Idempotency-Key (a retry returns the original challenge). `pay_to` is the default payout address of the network (422 no_payout_address without one), ' +
      "never an input; `asset` is the network's canonical USDC. The payer signs an EIP-3009 TransferWithAuthorization of exactly `amount` to `pay_to` with " +
      '`nonce` = `authorization_nonce` over the EIP-712 domain of `payment_requirements.extra`, then calls POST /v1/x402/challenges/{id}/pay.',
    input: NewChallengeBody,
    output: Challenge,
    status: 201,
    guard: entitled,
    idempotency: { key: 'required: a retry with the same key returns the first challenge' },
    mcp: {
      description:
        'Asks for a USDC payment (x402): returns the payment requirements a payer signs an EIP-3009 authorization against. ' +
        'amount is in base units (USDC has 6 decimals: 10000 = 0.01 USDC). Needs the x402_payments entitlement and a payout address for the network.',
      hints: { idempotentHint: true },
    },
    handle: createChallengeOnce,
  }),
  operation({
    name: 'get_payment_challenge',
    method: 'GET',
    path: '/v1/x402/challenges/:id',
    tag: TAG,
    summary: 'Get a payment challenge',
    description:
      'One of your challenges: pending, settled (with settle_tx) or failed (with failure_reason). ' +
      "Another organization's challenge is 404 not_found: its id lets a payer pay, not read.",
    params: IdParam,
    resource: 'challenge',
    output: Challenge,
    guard: entitled,
    graphql: {
      field: 'paymentChallenge',
      type: 'PaymentChallenge',
      description: 'A payment challenge this organization issued (as GET /v1/x402/challenges/{id}).',
    },
    handle: async ({ ctx, auth }, { id }) => presentChallenge(await getOwnChallenge(ctx.sql, auth.orgId, id), ctx.config.PUBLIC_URL),
  }),
  operation({
    name: 'pay_payment_challenge',
    method: 'POST',
    path: '/v1/x402/challenges/:id/pay',
    tag: TAG,
    summary: 'Pay a payment challenge',
    description:
      'Called by the paying organization with its own credentials: its spend policy applies, and the challenge id lets it pay, not read. `payment` is the x402 v1 payload ' +
      '(`{x402Version: 1, scheme: "exact", network, payload: {signature, authorization: {from, to, value, validAfter, validBefore, nonce}}}`), built for example with the ' +
      "`x402` package: `preparePaymentHeader(from, 1, payment_requirements)`, set `payload.authorization.nonce` to the challenge's `authorization_nonce`, `signPaymentHeader`, and send the decoded header. " +
      "It is verified against the stored challenge only, then the token's authorizationState is read, the transfer simulated and sent; the receipt comes back synchronously. " +
      "A settled challenge returns the original receipt. Failures: 422 payment_verification_failed (details.reasons, several at once; payer_mismatch when the challenge is already claimed with another payer's authorization), 422 payment_declined (spend policy; the challenge stays pending), " +
      "422 settle_cap_exceeded (the payee's caps; the challenge fails, nothing moves on chain), 422 challenge_expired, 502 settlement_failed with reasons insufficient_funds (permanent), " +
      'authorization_already_used (permanent), facilitator_unavailable and settlement_failed (transient, Retry-After) or settlement_misconfigured (operator fault); ' +
      '409 conflict when another payment of the challenge or another challenge holds this authorization. Every failure carries details {reasons, failure_category}.',
    params: IdParam,
    resource: 'challenge',
    input: t.Object({
      // Any JSON is taken: a payload of the wrong shape is the spec's 422 malformed_payload, not a 400 validation_error.
      payment: t.Union([PaymentPayload, t.Unknown()], { description: 'the x402 v1 payment payload (the decoded X-PAYMENT header)' }),
    }),
    output: Receipt,
    guard: entitled,
    mcp: {
      description:
        "Pays another organization's challenge with a signed x402 v1 payment (an EIP-3009 authorization of exactly the amount to pay_to, nonce = the challenge's authorization_nonce). " +
        'Your spend policy applies (payment_declined, the challenge stays pending); settled on chain before the receipt comes back. ' +
        'Paying a settled challenge again returns its original receipt and moves nothing.',
      hints: { idempotentHint: true, openWorldHint: true },
    },
    handle: ({ ctx, auth }, { id, payment }) => payChallenge(ctx, { challengeId: id, payerOrg: auth.orgId, payment }),
  }),
  operation({
    name: 'get_spend_policy',
    method: 'GET',
    path: '/v1/x402/spend-policy',
    tag: TAG,
    summary: 'Get the spend policy',
    description:
      'Any member. What this organization may pay: paused (every payment declined), per_payment_cap, daily_cap (base units, per UTC day) and payee_allowlist; null means no limit. ' +
      'Without a policy: not paused, no caps, any payee.',
    output: SpendPolicy,
    guard: entitled,
    handle: async ({ ctx, auth }) => presentPolicy(await getSpendPolicy(ctx.sql, auth.orgId)),
  }),
  operation({
    name: 'update_spend_policy',
    method: 'PUT',
    path: '/v1/x402/spend-policy',
    tag: TAG,
    summary: 'Update the spend policy',
    description:
      'Owner or admin (the current role of the person who created the credential). Merge update: an omitted field keeps its value, an explicit null clears a cap or the allowlist; paused: true is the kill switch. ' +
      'A payment the policy refuses is 422 payment_declined with details.reasons (paused, per_payment_cap, daily_cap, allowlist, spend_non_positive_amount); the challenge stays pending.',
    input: SpendPolicyUpdate,
    output: SpendPolicy,
    guard: entitled,
    async handle({ ctx, auth }, update) {
      await requireOwnerOrAdmin(ctx.sql, auth, 'x402.spend-policy')
      return presentPolicy(await updateSpendPolicy(ctx.sql, auth.orgId, update))
    },
  }),
  listOperation({
    name: 'list_declined_payments',
    method: 'GET',
    path: '/v1/x402/declined-payments',
    tag: TAG,
    summary: 'List declined payments',
    description: 'Payments your spend policy refused, newest first, with the reasons (paused, per_payment_cap, daily_cap, allowlist).',
    guard: entitled,
    list: {
      item: DeclinedPayment,
      scope: () => 'x402-declined',
      fetch: ({ ctx, auth }, _args, page) => listDeclined(ctx.sql, auth.orgId, page),
      present: presentDeclined,
      max: 200,
    },
  }),
  listOperation({
    name: 'list_payments',
    method: 'GET',
    path: '/v1/x402/payments',
    tag: TAG,
    summary: 'List payments',
    description:
      'The payments ledger, newest first: received rows (this organization was paid) and sent rows (it paid a challenge of an organization here), with status, amount, counterparty and settle_tx; the filters combine. ' +
      'With `Accept: text/csv` the filtered rows come as a CSV attachment (cursor and limit ignored) of at most 10,000 rows, with `X-Truncated: true` when that ceiling cut it.',
    input: t.Object({
      status: t.Optional(OneOf(LEDGER_STATUSES)),
      direction: t.Optional(OneOf(DIRECTIONS)),
      network: t.Optional(NetworkSchema),
      created_after: t.Optional(Timestamp('rows created at or after this instant')),
      created_before: t.Optional(Timestamp('rows created at or before this instant')),
    }),
    guard: entitled,
    mcp: {
      description:
        'The payments ledger, newest first: received rows (you were paid) and sent rows (you paid), with status, amount, counterparty and settle_tx.',
    },
    graphql: {
      field: 'payments',
      type: 'Payment',
      description: 'The x402 ledger: payments received and sent, newest first (as GET /v1/x402/payments); the filters combine.',
      args: { status: 'PaymentStatus', direction: 'PaymentDirection', network: 'String', created_after: 'DateTime', created_before: 'DateTime' },
    },
    alternative: {
      accept: /\btext\/csv\b/i,
      async respond({ ctx, auth }, args) {
        const { csv, truncated } = await ledgerCsv(ctx.sql, auth.orgId, ledgerFilters(args))
        return new Response(csv, {
          headers: {
            'content-type': 'text/csv; charset=utf-8',
            'content-disposition': 'attachment; filename="x402-payments.csv"',
            'cache-control': 'private, no-store',
            ...(truncated && { 'x-truncated': 'true' }),
          },
        })
      },
    },
    list: {
      item: LedgerRow,
      scope(_call, args) {
        // the filters are checked before the cursor is, as they always were
        ledgerFilters(args)
        return 'x402-ledger'
      },
      fetch: ({ ctx, auth }, args, page) => listLedger(ctx.sql, auth.orgId, page, ledgerFilters(args)),
      present: presentLedgerRow,
      max: 200,
    },
  }),
]
