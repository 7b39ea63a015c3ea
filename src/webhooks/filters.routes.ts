/** Sender filters: create, list, read, enable or disable, delete. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { createFilter, deleteFilter, getFilter, listFilters, presentFilter, setFilterEnabled } from './filters.service'
import { PATTERN, FilterType, Filter } from './filters.model'
import { IdParams, Deleted } from '../http/schema'

export function filterRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/filters', tags: ['Filters'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        const row = await createFilter(ctx.sql, auth.orgId, body)
        set.status = 201
        return presentFilter(row)
      },
      {
        body: t.Object({
          type: FilterType,
          pattern: t.String({ minLength: 1, maxLength: 500, description: PATTERN }),
          domain_id: t.Optional(
            t.Union([t.String({ format: 'uuid' }), t.Null()], {
              error: 'must be a domain id (uuid) or null',
              description: 'a domain of the organization (needs the filters_per_domain entitlement); omitted or null = org-wide',
            }),
          ),
        }),
        response: { 201: Ok(Filter) },
        detail: {
          summary: 'Create a filter',
          description:
            'New filters are enabled. A domain_id needs the filters_per_domain entitlement (403 feature_disabled) and must be a domain of the organization (404).',
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `filters:${auth.orgId}`
        return cursors(ctx).read(scope, query, page => listFilters(ctx.sql, auth.orgId, page), presentFilter)
      },
      {
        query: t.Object(pageQuery()),
        response: { 200: Paged(Filter) },
        detail: { summary: 'List filters', description: 'Newest first, enabled or not.' },
      },
    )
    .get('/:id', async ({ auth, params }) => presentFilter(await getFilter(ctx.sql, auth.orgId, params.id)), {
      params: IdParams,
      response: { 200: Ok(Filter) },
      detail: { summary: 'Get a filter' },
    })
    .patch('/:id', async ({ auth, params, body }) => presentFilter(await setFilterEnabled(ctx.sql, auth.orgId, params.id, body.enabled)), {
      params: IdParams,
      body: t.Object({ enabled: t.Boolean() }),
      response: { 200: Ok(Filter) },
      detail: {
        summary: 'Enable or disable a filter',
        description:
          'enabled is the only field that changes; to change type, pattern or domain_id, delete the filter and create a new one (other fields are 400).',
      },
    })
    .delete('/:id', async ({ auth, params }) => ({ ...(await deleteFilter(ctx.sql, auth.orgId, params.id)), deleted: true as const }), {
      params: IdParams,
      response: { 200: Ok(Deleted) },
      detail: { summary: 'Delete a filter', description: 'Deletes it at once.' },
    })
}
