/** The caller (viewer) and the account: plan, entitlements, limits, storage (the Query fields are made from account/operations.ts). */
import { getStorage } from '../account/service'
import { allow } from './context'
import type { SchemaModule } from './module'

/** The date `Storage.quotaMb` goes (with the next apiVersion, and not before): six months after this notice. */
export const QUOTA_MB_REMOVAL = '2027-06-01'

export const accountModule: SchemaModule = {
  sdl: `
enum Role { owner admin member }
enum AuthMethod { api_key oauth connection }

type Viewer {
  orgId: ID!
  "null for credentials minted without a person"
  userId: ID
  role: Role!
  authMethod: AuthMethod!
  keyId: ID!
  "also in the X-Request-Id header"
  requestId: String!
}

type Account {
  plan: String!
  entitlements: [String!]!
  limits: AccountLimits!
  "stored-mail usage (as GET /v1/account/storage)"
  storage: Storage!
}

type AccountLimits {
  storageMb: Int!
  sendPerHour: Int!
  sendPerDay: Int!
  apiPerMinute: Int!
  "null = unlimited"
  webhooksMaxGlobal: Int
  webhooksPerDomain: Boolean!
  filtersPerDomain: Boolean!
  spamThresholdsPerDomain: Boolean!
  memoryKeysMax: Int!
  memoryStorageMb: Int!
  memoryValueMaxKb: Int!
  wakesActiveMax: Int!
  wakeMinIntervalMinutes: Int!
}

type Storage {
  usedBytes: Float!
  usedKb: Float!
  usedMb: Float!
  "storage included in the plan (an allowance)"
  includedMb: Int!
  "usage at which inbound mail is refused; null on paid plans"
  limitMb: Int
  overageMb: Float!
  quotaMb: Int! @deprecated(reason: "Use includedMb (equal; never a limit). Removal date: ${QUOTA_MB_REMOVAL}, with the next apiVersion.")
  "usage as a percentage of the allowance; can exceed 100"
  percentage: Float!
  emailsCount: Int!
}
`,
  resolvers: {
    Account: {
      storage: async (_s, _a, g) => getStorage(g.ctx.sql, allow(g, '/v1/account/storage', 'the storage').orgId),
    },
  },
}
