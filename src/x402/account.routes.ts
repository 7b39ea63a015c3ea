/**
 * The payments ledger (JSON or CSV): written by hand for its CSV attachment. The spend policy and
 * the declined payments are declared in operations.ts.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { Paged } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { OneOf } from '../http/schema'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { x402Access } from './access'
import { ledgerCsv, listLedger, presentLedgerRow } from './ledger.service'
import { DIRECTIONS, LEDGER_STATUSES, LedgerRow, NetworkSchema } from './model'

export function x402AccountRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/x402', tags: ['x402 payments'] }).use(x402Access(ctx)).get(
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
