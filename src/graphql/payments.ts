/**
 * x402 payments: the object types of the ledger and the challenges, and a ledger row's challenge
 * (with the x402_payments entitlement, as on /v1/x402). The Query fields `payments` and
 * `paymentChallenge` are declared in x402/operations.ts.
 */
import { presentChallenge } from '../x402/challenges.service'
import { allowPayments } from './context'
import { connectionTypes } from './connection'
import type { SchemaModule } from './module'

export const paymentsModule: SchemaModule = {
  sdl: `
enum PaymentStatus { pending settled failed }
enum PaymentDirection { received sent }

type Payment {
  id: ID!
  challengeId: ID!
  direction: PaymentDirection!
  status: PaymentStatus!
  "in the asset's smallest unit, as a decimal string"
  amount: String!
  asset: String!
  network: String!
  counterparty: String!
  settleTx: String
  failureReason: String
  createdAt: DateTime!
  updatedAt: DateTime!
  "the challenge, when this organization issued it (payments received)"
  challenge: PaymentChallenge
}

type NonceBinding {
  interactionId: String
  challengeStepId: String
  challengeNonce: String
}

type PaymentChallenge {
  id: ID!
  status: String!
  network: String!
  amount: String!
  asset: String!
  payTo: String!
  description: String
  "the x402 PaymentRequirements a payer signs for"
  paymentRequirements: JSON!
  "the public GET /x402/pay/{id}: any stock x402 client pays the challenge there, with no account"
  payUrl: String!
  nonceBinding: NonceBinding!
  authorizationNonce: String
  expiresAt: DateTime!
  settleTx: String
  settledAt: DateTime
  failureReason: String
  failureCategory: String
  "why a failed payment was refused"
  reasons: [String!]
  createdAt: DateTime!
}

${connectionTypes('Payment', 'ledger rows')}
`,
  resolvers: {
    Payment: {
      challenge: async (p: { challenge_id: string }, _a, g) => {
        await allowPayments(g, '/v1/x402/challenges/:id', 'payment challenges')
        const row = await g.loaders.challenge.load(p.challenge_id)
        return row ? presentChallenge(row, g.ctx.config.PUBLIC_URL) : null
      },
    },
  },
}
