/** POST/GET /v1/x402/payout-addresses, and the statement to sign. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { requireOwnerOrAdmin } from '../account/roles'
import { Ok } from '../http/envelope'
import { x402Access } from './access'
import { Address, NetworkSchema, PayoutAddress } from './model'
import { checkAddress, listPayoutAddresses, payoutStatement, presentPayout, registerPayoutAddress, STATEMENT_MAX_AGE_SECONDS } from './payout.service'

const STATEMENT_DOC =
  'The statement is five lines joined by "\\n", without a trailing newline:\n\n' +
  '```\nRegister x402 payout address\norganization: <org_id>\nnetwork: <base|base-sepolia>\naddress: <EIP-55 checksummed address>\nissued_at: <ISO 8601 UTC with milliseconds, e.g. 2026-01-01T12:00:00.000Z>\n```\n\n' +
  'signed with personal_sign (EIP-191) by the key of `address`, at most 10 minutes before registration.'

export function payoutRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/x402/payout-addresses', tags: ['x402 payments'] })
    .use(x402Access(ctx))
    .get('/', async ({ auth }) => (await listPayoutAddresses(ctx.sql, auth.orgId)).map(presentPayout), {
      response: { 200: Ok(t.Array(PayoutAddress)) },
      detail: { summary: 'List payout addresses', description: 'Any member. Needs x402_payments (403 feature_disabled).' },
    })
    .get(
      '/message',
      ({ auth, query }) => {
        const issuedAt = new Date()
        return {
          message: payoutStatement(auth.orgId, query.network, checkAddress('address', query.address), issuedAt),
          issued_at: issuedAt.toISOString(),
          expires_at: new Date(issuedAt.getTime() + STATEMENT_MAX_AGE_SECONDS * 1000).toISOString(),
        }
      },
      {
        query: t.Object({ network: NetworkSchema, address: Address }),
        response: {
          200: Ok(
            t.Object({
              message: t.String({ description: 'the exact statement to sign with personal_sign (EIP-191)' }),
              issued_at: t.String({ format: 'date-time' }),
              expires_at: t.String({ format: 'date-time', description: 'the statement is refused after this (10 minutes)' }),
            }),
          ),
        },
        detail: { summary: 'The statement to sign for a payout address', description: `Ready to sign; any member may fetch it. ${STATEMENT_DOC}` },
      },
    )
    .post(
      '/',
      async ({ auth, body, set }) => {
        await requireOwnerOrAdmin(ctx.sql, auth, 'x402.payout-addresses')
        set.status = 201
        return presentPayout(await registerPayoutAddress(ctx.sql, auth.orgId, body))
      },
      {
        body: t.Object({
          network: NetworkSchema,
          address: Address,
          message: t.String({ maxLength: 1000, description: 'the signed statement' }),
          signature: t.String({ maxLength: 200, description: '65-byte hex EIP-191 signature of message' }),
        }),
        response: { 201: Ok(PayoutAddress) },
        detail: {
          summary: 'Register a payout address',
          description:
            'Owner or admin (the current role of the person who created the credential; a key of a member or without a creator is 403 forbidden). ' +
            'The recovered signer must equal `address`; the address becomes the default of its network (registering a known address again makes it the default). ' +
            STATEMENT_DOC,
        },
      },
    )
}
