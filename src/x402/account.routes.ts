/** The paying side and the books: spend policy, declined payments and the ledger (JSON or CSV). */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { requireOwnerOrAdmin } from '../account/roles'
import { Ok, Paged } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { x402Access } from './access'
import { ledgerCsv, listDeclined, listLedger, presentDeclined, presentLedgerRow } from './ledger.service'
import { DeclinedPayment, DIRECTIONS, LEDGER_STATUSES, LedgerRow, NetworkSchema, SpendPolicy, SpendPolicyUpdate } from './model'
import { getSpendPolicy, presentPolicy, updateSpendPolicy } from './policy.service'

export function x402AccountRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/x402', tags: ['x402 payments'] })
    .use(x402Access(ctx))
    .get('/spend-policy', async ({ auth }) => presentPolicy(await getSpendPolicy(ctx.sql, auth.orgId)), {
      response: { 200: Ok(SpendPolicy) },
      detail: { summary: 'The spend policy', description: 'Any member. Without a policy: not paused, no caps, any payee.' },
    })
    .put(
      '/spend-policy',
      async ({ auth, body }) => {
        await requireOwnerOrAdmin(ctx.sql, auth, 'x402.spend-policy')
        return presentPolicy(await updateSpendPolicy(ctx.sql, auth.orgId, body))
      },
      {
        body: SpendPolicyUpdate,
        response: { 200: Ok(SpendPolicy) },
        detail: {
          summary: 'Update the spend policy',
          description:
            'Owner or admin (the current role of the person who created the credential). Merge update: an omitted field keeps its value, an explicit null clears a cap or the allowlist. ' +
            'A payment the policy refuses is 422 payment_declined with details.reasons (paused, per_payment_cap, daily_cap, allowlist, spend_non_positive_amount); the challenge stays pending.',
        },
      },
    )
    .get(
      '/declined-payments',
      async ({ auth, query }) => {
        return cursors(ctx).read('x402-declined', query, page => listDeclined(ctx.sql, auth.orgId, page), presentDeclined)
      },
      {
        query: t.Object(pageQuery(200, 50)),
        response: { 200: Paged(DeclinedPayment) },
        detail: { summary: 'Payments the spend policy declined, newest first' },
      },
    )
    .get(
      '/payments',
      async ({ auth, query, headers }) => {
        const filters = {
          status: query.status,
          direction: query.direction,
          network: query.network,
          createdAfter: query.created_after ? parseTimestamp('created_after', query.created_after) : null,
          createdBefore: query.created_before ? parseTimestamp('created_before', query.created_before) : null,
        }
        if (/\btext\/csv\b/i.test(headers.accept ?? '')) {
          const { csv, truncated } = await ledgerCsv(ctx.sql, auth.orgId, filters)
          // a Response goes out as is (no envelope); typed as the JSON page the schema documents
          return new Response(csv, {
            headers: {
              'content-type': 'text/csv; charset=utf-8',
              'content-disposition': 'attachment; filename="x402-payments.csv"',
              'cache-control': 'private, no-store',
              ...(truncated && { 'x-truncated': 'true' }),
            },
          }) as never
        }
        return cursors(ctx).read('x402-ledger', query, page => listLedger(ctx.sql, auth.orgId, page, filters), presentLedgerRow)
      },
      {
        query: t.Object({
          ...pageQuery(200, 50),
          status: t.Optional(OneOf(LEDGER_STATUSES)),
          direction: t.Optional(OneOf(DIRECTIONS)),
          network: t.Optional(NetworkSchema),
          created_after: t.Optional(Timestamp('rows created at or after this instant')),
          created_before: t.Optional(Timestamp('rows created at or before this instant')),
        }),
        response: { 200: Paged(LedgerRow) },
        detail: {
          summary: 'The payments ledger, newest first',
          description:
            'Received rows (this organization was paid) and sent rows (it paid a challenge of an organization here). With `Accept: text/csv` the filtered rows come as a CSV attachment ' +
            '(cursor and limit ignored) of at most 10,000 rows, with `X-Truncated: true` when that ceiling cut it.',
        },
      },
    )
}
