/** TypeBox schemas of the x402 routes: requests, records and the documented failures. */
import type { Static, TSchema } from '@sinclair/typebox'
import { t } from 'elysia'
import { Nullable, OneOf } from '../http/schema'
import { NETWORKS } from './networks'

/**
 * A record of `T` as the database returns it, the row type of a statement that selects the
 * record's columns: its timestamps `D` are Dates (or null, where the record's may be), which the
 * service presents as ISO strings.
 */
export type Stored<T extends TSchema, D extends keyof Static<T>> = Omit<Static<T>, D> & { [K in D]: Date | Extract<Static<T>[K], null> }

export const NetworkSchema = OneOf(NETWORKS, { description: 'base or base-sepolia' })
export const Address = t.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: '0x-prefixed 20-byte address' })
/** a positive integer of token base units, as a string (USDC: 6 decimals, 10000 = 0.01 USDC) */
export const BaseUnits = (description = 'token base units as a string (USDC has 6 decimals: 10000 = 0.01 USDC)') =>
  t.String({ pattern: '^[1-9][0-9]{0,30}$', description })

export const PayoutAddress = t.Object({
  id: t.String({ format: 'uuid' }),
  network: NetworkSchema,
  address: t.String({ description: 'EIP-55 checksummed' }),
  is_default: t.Boolean({ description: 'challenges of this network are paid to the default address' }),
  created_at: t.String({ format: 'date-time' }),
})

export const PaymentRequirements = t.Object(
  {
    scheme: t.Literal('exact'),
    network: NetworkSchema,
    maxAmountRequired: t.String({ description: 'the exact amount, base units' }),
    payTo: t.String({ description: "the payee's default payout address at creation" }),
    asset: t.String({ description: "the network's canonical USDC, checksummed" }),
    resource: t.String({ description: 'x402:challenge:<challenge_id>' }),
    description: t.String(),
    mimeType: t.String(),
    maxTimeoutSeconds: t.Integer({ description: 'the x402 client signs validBefore = now + maxTimeoutSeconds' }),
    extra: t.Object(
      { name: t.String(), version: t.String() },
      { description: "the token's EIP-712 domain name and version: USDC/2 on base-sepolia, USD Coin/2 on base" },
    ),
  },
  { description: 'x402 v1 PaymentRequirements' },
)

export const Challenge = t.Object({
  id: t.String({ format: 'uuid' }),
  status: OneOf(['pending', 'settled', 'failed'] as const),
  network: NetworkSchema,
  amount: t.String({ description: 'base units' }),
  asset: t.String(),
  pay_to: t.String(),
  description: t.String(),
  payment_requirements: PaymentRequirements,
  pay_url: t.String({ description: 'the public GET /x402/pay/{id}: any stock x402 client pays the challenge there, with no account' }),
  nonce_binding: t.Object({
    interaction_id: t.String(),
    challenge_step_id: t.String({ format: 'uuid' }),
    challenge_nonce: t.String({ description: '64 hex characters' }),
  }),
  authorization_nonce: t.String({
    description: 'the EIP-3009 nonce to sign: keccak256(abi.encode(string interaction_id, string challenge_step_id, bytes32 challenge_nonce))',
  }),
  expires_at: t.String({ format: 'date-time' }),
  settle_tx: Nullable(t.String({ description: 'transaction hash, when settled' })),
  settled_at: Nullable(t.String({ format: 'date-time' })),
  failure_reason: Nullable(t.String({ description: 'when failed' })),
  failure_category: Nullable(t.String({ description: 'cap or settlement, when failed' })),
  reasons: Nullable(t.Array(t.String())),
  created_at: t.String({ format: 'date-time' }),
})

export const NewChallengeBody = t.Object({
  amount: BaseUnits(),
  network: NetworkSchema,
  description: t.Optional(t.String({ maxLength: 512, default: '' })),
  expires_in: t.Optional(t.Integer({ minimum: 60, maximum: 86400, default: 300, description: 'seconds, 60 to 86400' })),
})

export const PaymentPayload = t.Object(
  {
    x402Version: t.Integer(),
    scheme: t.String(),
    network: t.String(),
    payload: t.Object({
      signature: t.String(),
      authorization: t.Object({
        from: t.String(),
        to: t.String(),
        value: t.String(),
        validAfter: t.String(),
        validBefore: t.String(),
        nonce: t.String(),
      }),
    }),
  },
  { description: 'the x402 v1 payment payload (the decoded X-PAYMENT header), as the x402 client builds it' },
)

export const Receipt = t.Object({
  challenge_id: t.String({ format: 'uuid' }),
  status: t.Literal('settled'),
  settle_tx: t.String(),
  network: NetworkSchema,
  amount: t.String(),
  asset: t.String(),
  pay_to: t.String(),
  payer: t.String({ description: 'the wallet that paid' }),
  settled_at: t.String({ format: 'date-time' }),
})

export const SpendPolicy = t.Object({
  paused: t.Boolean({ description: 'kill switch: every payment is declined' }),
  per_payment_cap: Nullable(t.String({ description: 'largest single payment, base units; null = none' })),
  daily_cap: Nullable(t.String({ description: 'total paid per UTC day, base units; null = none' })),
  payee_allowlist: Nullable(t.Array(t.String(), { description: 'payee wallets this organization may pay; null = any' })),
  updated_at: Nullable(t.String({ format: 'date-time' })),
})

/** Merge update: an omitted field keeps its value, an explicit null clears a cap or the allowlist. */
export const SpendPolicyUpdate = t.Object({
  paused: t.Optional(t.Boolean()),
  per_payment_cap: t.Optional(Nullable(BaseUnits())),
  daily_cap: t.Optional(Nullable(BaseUnits())),
  payee_allowlist: t.Optional(Nullable(t.Array(Address, { maxItems: 1000 }))),
})

export const DeclinedPayment = t.Object({
  id: t.String({ format: 'uuid' }),
  challenge_id: t.String({ format: 'uuid' }),
  network: NetworkSchema,
  amount: t.String(),
  pay_to: t.String(),
  reasons: t.Array(t.String()),
  created_at: t.String({ format: 'date-time' }),
})

export const LEDGER_STATUSES = ['pending', 'settled', 'failed'] as const
export const DIRECTIONS = ['received', 'sent'] as const

export const LedgerRow = t.Object({
  id: t.String({ format: 'uuid' }),
  challenge_id: t.String({ format: 'uuid' }),
  direction: OneOf(DIRECTIONS),
  status: OneOf(LEDGER_STATUSES),
  amount: t.String(),
  asset: t.String(),
  network: NetworkSchema,
  counterparty: t.String({ description: 'the other wallet: the payer for received rows, the payee for sent rows' }),
  settle_tx: Nullable(t.String()),
  failure_reason: Nullable(t.String()),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})
