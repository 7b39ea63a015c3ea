/**
 * The function routes still written by hand; the others are declared in operations.ts.
 * GET /v1/functions/:id/logs answers its page as `{logs, next_cursor}` in the data, which a
 * declared list (a page of items) does not.
 */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { ENVELOPE, MetaSchema, Page } from '../http/envelope'
import { cursors, pageQuery } from '../http/pagination'
import { Nullable } from '../http/schema'
import { FunctionId, LogLineSchema } from './model'
import { listLogs, presentLog } from './observe'

export function functionRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/functions', tags: ['Functions'] }).use(authenticated(ctx)).get(
    '/:id/logs',
    async ({ auth, params, query }) => {
      const scope = `logs:${params.id}`
      const p = await cursors(ctx).read(scope, query, page => listLogs(ctx.sql, auth.orgId, params.id, page), presentLog)
      // the spec names next_cursor in the data; meta.cursor carries the same value, as in every list
      return new Page({ logs: p.data, next_cursor: p.meta.cursor } as never, p.meta) as never
    },
    {
      params: FunctionId,
      query: t.Object(pageQuery(500, 100)),
      response: {
        200: t.Object(
          {
            data: t.Object({
              logs: t.Array(LogLineSchema),
              next_cursor: Nullable(t.String({ description: 'pass as cursor for older lines; also in meta.cursor' })),
            }),
            meta: MetaSchema,
          },
          { [ENVELOPE]: 'paged' },
        ),
      },
      detail: {
        summary: 'Captured console output of a function, newest first',
        description: 'next_cursor (and meta.cursor) is passed back as cursor for the next page.',
      },
    },
  )
}
