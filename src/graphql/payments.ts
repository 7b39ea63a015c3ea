/** x402 payments: the ledger and the challenges (with the x402_payments entitlement, as on /v1/x402). */
import { presentChallenge } from '../x402/challenges.service'
import { listLedger, presentLedgerRow } from '../x402/ledger.service'
import { parseTimestamp } from '../http/timestamps'
import { allowPayments } from './context'
import { CONNECTION_ARGS, connection, connectionTypes, pageOf, type ConnectionArgs } from './connection'
import type { SchemaModule } from './module'

export const paymentsModule: SchemaModule = {
  sdl: `
extend type Query {
  "The x402 ledger: payments received and sent, newest first (as GET /v1/x402/payments); the filters combine."
  payments(${CONNECTION_ARGS}, status: PaymentStatus, direction: PaymentDirection, network: String, createdAfter: DateTime, createdBefore: DateTime): PaymentConnection
}

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
    Query: {
      payments: async (
        _s,
        args: ConnectionArgs & { status?: string; direction?: string; network?: string; createdAfter?: string; createdBefore?: string },
        g,
      ) => {
        const auth = await allowPayments(g, '/v1/x402/payments', 'payments')
        const filters = {
          status: args.status,
          direction: args.direction,
          network: args.network,
          createdAfter: args.createdAfter ? parseTimestamp('createdAfter', args.createdAfter) : null,
          createdBefore: args.createdBefore ? parseTimestamp('createdBefore', args.createdBefore) : null,
        }
        const scope = `gql:payments?${JSON.stringify([args.status ?? null, args.direction ?? null, args.network ?? null, args.createdAfter ?? null, args.createdBefore ?? null])}`
        const page = pageOf(g.ctx, scope, args)
        return connection(g.ctx, scope, page, await listLedger(g.ctx.sql, auth.orgId, page, filters), presentLedgerRow)
      },
    },
    Payment: {
      challenge: async (p: { challenge_id: string }, _a, g) => {
        await allowPayments(g, '/v1/x402/challenges/:id', 'payment challenges')
        const row = await g.loaders.challenge.load(p.challenge_id)
        return row ? presentChallenge(row, g.ctx.config.PUBLIC_URL) : null
      },
    },
  },
}
