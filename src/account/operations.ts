/**
 * The account's reads, declared once for REST and GraphQL (src/http/operation.ts); neither is an
 * MCP tool. Who the credential is (/v1/whoami, /v1/me) and the webhook signing secret stay in
 * routes.ts: the identity carries the request's id, the deprecated alias its deprecation headers,
 * and the secret a Cache-Control header.
 */
import { operation } from '../http/operation'
import { Account, Storage } from './model'
import { getAccount, getStorage } from './service'

const TAG = 'Account'

export const accountOperations = [
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
]
