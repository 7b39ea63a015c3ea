/** Managed inboxes: addresses under the managed domain, created, listed, read and deleted by their organization. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { authenticated } from '../http/auth'
import { Ok, Paged } from '../http/envelope'
import { pageQuery, cursors } from '../http/pagination'
import { createInbox, deleteInbox, getInbox, listInboxes, presentManagedInbox } from './service'
import { Inbox } from './model'
import { IdParams, Deleted } from '../http/schema'

export function inboxRoutes(ctx: AppContext) {
  const domain = ctx.config.MANAGED_DOMAIN
  return new Elysia({ prefix: '/v1/inboxes', tags: ['Inbox'] })
    .use(authenticated(ctx))
    .post(
      '/',
      async ({ auth, body, set }) => {
        const row = await createInbox(ctx.sql, auth.orgId, domain, body ?? {})
        set.status = 201
        return presentManagedInbox(row)
      },
      {
        // no body at all is a random address
        body: t.Optional(
          t.Object({
            local_part: t.Optional(
              t.String({
                minLength: 1,
                maxLength: 63,
                description: `the part before @${domain}; lowercased; a letter or digit, then letters, digits, ".", "_" or "-". Role names (postmaster, abuse, admin, noreply, ...) are reserved. Omitted: a random one`,
              }),
            ),
            display_name: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'no control characters' })),
          }),
        ),
        response: { 201: Ok(Inbox) },
        detail: {
          summary: 'Create an inbox',
          description: `A new address @${domain} for the organization. An address another inbox has is 409 conflict; a reserved or malformed local part is 400 validation_error.`,
        },
      },
    )
    .get(
      '/',
      async ({ auth, query }) => {
        const scope = `inboxes:${auth.orgId}`
        return cursors(ctx).read(scope, query, page => listInboxes(ctx.sql, auth.orgId, page), presentManagedInbox)
      },
      {
        query: t.Object(pageQuery()),
        response: { 200: Paged(Inbox) },
        detail: { summary: 'List inboxes', description: 'Newest first.' },
      },
    )
    .get('/:id', async ({ auth, params }) => presentManagedInbox(await getInbox(ctx.sql, auth.orgId, params.id)), {
      params: IdParams,
      response: { 200: Ok(Inbox) },
      detail: { summary: 'Get an inbox' },
    })
    .delete('/:id', async ({ auth, params }) => ({ ...(await deleteInbox(ctx.sql, auth.orgId, params.id)), deleted: true as const }), {
      params: IdParams,
      response: { 200: Ok(Deleted) },
      detail: {
        summary: 'Delete an inbox',
        description: 'Deletes the inbox at once: mail to its address is refused from then on, and the address may be taken again. Mail already received stays.',
      },
    })
}
