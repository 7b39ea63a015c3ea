/** Managed inboxes: addresses under the managed domain, created, listed, read and deleted by their organization. */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Deleted, IdParam } from '../http/schema'
import { Inbox } from './model'
import { deleteInbox, getInbox, listInboxes } from '../mail/inbox-queries'
import { createInbox, presentManagedInbox } from './service'

const TAG = 'Inbox'

export const inboxOperations = [
  operation({
    name: 'create_inbox',
    method: 'POST',
    path: '/v1/inboxes',
    tag: TAG,
    summary: 'Create an inbox',
    description:
      'A new address under the managed domain for the organization; without local_part the address is random. ' +
      'An address another inbox has is 409 conflict; a reserved or malformed local part is 400 validation_error.',
    input: t.Object({
      local_part: t.Optional(
        t.String({
          minLength: 1,
          maxLength: 63,
          description:
            'the part before @; lowercased; a letter or digit, then letters, digits, ".", "_" or "-". Role names (postmaster, abuse, admin, noreply, ...) are reserved. Omitted: a random one',
        }),
      ),
      display_name: t.Optional(t.String({ minLength: 1, maxLength: 100, description: 'the name shown in From; no control characters' })),
    }),
    // no body at all is a random address
    bodyOptional: true,
    output: Inbox,
    status: 201,
    handle: async ({ ctx, auth }, input) => presentManagedInbox(await createInbox(ctx.sql, auth.orgId, ctx.config.MANAGED_DOMAIN, input)),
  }),
  listOperation({
    name: 'list_inboxes',
    method: 'GET',
    path: '/v1/inboxes',
    tag: TAG,
    summary: 'List inboxes',
    description: 'The email addresses of this organization, newest first.',
    graphql: { field: 'inboxes', type: 'Inbox', description: 'Managed inboxes, newest first (as GET /v1/inboxes).' },
    list: {
      item: Inbox,
      scope: ({ auth }) => `inboxes:${auth.orgId}`,
      fetch: ({ ctx, auth }, _args, page) => listInboxes(ctx.sql, auth.orgId, page),
      present: presentManagedInbox,
    },
  }),
  operation({
    name: 'get_inbox',
    method: 'GET',
    path: '/v1/inboxes/:id',
    tag: TAG,
    summary: 'Get an inbox',
    params: IdParam,
    resource: 'inbox',
    output: Inbox,
    graphql: { field: 'inbox', type: 'Inbox' },
    handle: async ({ ctx, auth }, { id }) => presentManagedInbox(await getInbox(ctx.sql, auth.orgId, id)),
  }),
  operation({
    name: 'delete_inbox',
    method: 'DELETE',
    path: '/v1/inboxes/:id',
    tag: TAG,
    summary: 'Delete an inbox',
    description: 'Deletes the inbox at once: mail to its address is refused from then on, and the address may be taken again. Mail already received stays.',
    params: IdParam,
    resource: 'inbox',
    output: Deleted,
    handle: async ({ ctx, auth }, { id }) => ({ ...(await deleteInbox(ctx.sql, auth.orgId, id)), deleted: true as const }),
  }),
]
