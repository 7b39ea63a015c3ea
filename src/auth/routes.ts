/** API key management: list, create (the secret is shown once), revoke. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { parseTimestamp, Timestamp } from '../http/timestamps'
import { createApiKey, listApiKeys, presentKey, revokeApiKey } from './api-keys'
import { credentialCache } from './credentials'
import { ApiKey } from './model'
import { IdParams } from '../http/schema'

export function apiKeyRoutes(ctx: AppContext) {
  return new Elysia({ prefix: '/v1/api-keys', tags: ['API keys'] })
    .use(authenticated(ctx))
    .get(
      '/',
      async ({ auth, query }) => {
        // the scope names the organization too: a cursor of another organization's list is refused
        const scope = `api-keys:${auth.orgId}`
        const createdAfter = query.created_after ? parseTimestamp('created_after', query.created_after) : null
        return cursors(ctx).read(scope, query, page => listApiKeys(ctx.sql, auth.orgId, page, createdAfter), presentKey)
      },
      {
        query: t.Object({ ...pageQuery(), created_after: t.Optional(Timestamp('only keys created after this instant')) }),
        response: { 200: Paged(ApiKey) },
        detail: { summary: 'List API keys', description: 'Newest first; revoked keys included with revoked_at set.' },
      },
    )
    .post(
      '/',
      async ({ auth, body, set }) => {
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return ctx.sql.begin(tx => createApiKey(tx, auth.orgId, auth.userId, body.name))
      },
      {
        body: t.Object({ name: t.String({ minLength: 1, maxLength: 100 }) }),
        response: { 201: Ok(t.Composite([ApiKey, t.Object({ key: t.String({ description: 'the secret; shown only in this response' }) })])) },
        detail: {
          summary: 'Create an API key',
          description:
            'The new key acts for the same person as the key that created it. Its secret is returned once. ' +
            'A function runtime key (SERVICE_API_KEY) cannot create keys (403 forbidden): they would outlive the function, whose deletion revokes its own key.',
        },
      },
    )
    .delete(
      '/:id',
      async ({ auth, params }) => {
        const row = await revokeApiKey(ctx.sql, auth.orgId, params.id)
        credentialCache(ctx).evict({ keyId: row.id })
        return presentKey(row)
      },
      {
        params: IdParams,
        response: { 200: Ok(ApiKey) },
        detail: { summary: 'Revoke an API key', description: 'Takes effect at once in this process and within 5 seconds in every other.' },
      },
    )
}
