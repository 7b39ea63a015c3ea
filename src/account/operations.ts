/**
 * Who the credential is, the account's reads and the webhook signing secret, declared once for
 * REST and GraphQL (src/http/operation.ts); none is an MCP tool. The identity carries the
 * request's id; the secret is answered with Cache-Control: no-store. Still in routes.ts: the
 * deprecated alias /v1/me (its deprecation headers).
 */
import type { Auth } from '../auth/principal'
import { operation } from '../http/operation'
import { Account, Identity, Secret, Storage } from './model'
import { getAccount, getStorage } from './service'
import { readWebhookSecret, rotateWebhookSecret } from './webhook-secret'

const TAG = 'Account'

/** Who the credential is, with the id of the request that asks. */
export const whoami = (auth: Auth, requestId: string) => ({
  org_id: auth.orgId,
  user_id: auth.userId,
  role: auth.role,
  request_id: requestId,
  auth_method: auth.method,
  key_id: auth.keyId,
})

export const accountOperations = [
  operation({
    name: 'get_identity',
    method: 'GET',
    path: '/v1/whoami',
    tag: TAG,
    summary: 'Who the credential is',
    output: Identity,
    mcp: false,
    graphql: { field: 'viewer', type: 'Viewer', description: 'Who the credential is (as GET /v1/whoami). Not for connection keys.' },
    handle: async ({ auth, requestId }) => whoami(auth, requestId!),
  }),
  operation({
    name: 'get_account',
    method: 'GET',
    path: '/v1/account',
    tag: TAG,
    summary: 'Plan, entitlements and limits',
    output: Account,
    mcp: false,
    graphql: {
      field: 'account',
      type: 'Account',
      description: 'Plan, entitlements, limits and storage of the organization (as GET /v1/account). Not for connection keys.',
    },
    handle: ({ ctx, auth }) => getAccount(ctx.sql, auth.orgId),
  }),
  operation({
    name: 'get_account_storage',
    method: 'GET',
    path: '/v1/account/storage',
    tag: TAG,
    summary: 'Stored-mail usage',
    output: Storage,
    mcp: false,
    handle: ({ ctx, auth }) => getStorage(ctx.sql, auth.orgId),
  }),
  operation({
    name: 'get_webhook_secret',
    method: 'GET',
    path: '/v1/account/webhook-secret',
    tag: TAG,
    summary: 'The webhook signing secret',
    description: 'Generated on first read.',
    output: Secret,
    mcp: false,
    writesOnRead: true,
    async handle({ ctx, auth, header }) {
      header?.('cache-control', 'no-store')
      return { secret: await readWebhookSecret(ctx.sql, ctx.keys, auth.orgId) }
    },
  }),
  operation({
    name: 'rotate_webhook_secret',
    method: 'POST',
    path: '/v1/account/webhook-secret/rotate',
    tag: TAG,
    summary: 'Rotate the webhook signing secret',
    description: 'Once per 60 minutes (429 rate_limit_exceeded otherwise). Deliveries are signed with both the new and the previous secret for 24 hours.',
    output: Secret,
    mcp: false,
    async handle({ ctx, auth, header }) {
      header?.('cache-control', 'no-store')
      return { secret: await rotateWebhookSecret(ctx, auth.orgId) }
    },
  }),
]
