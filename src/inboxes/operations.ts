/** Managed inboxes: addresses under the managed domain, created, listed, read and deleted by their organization. */
import { t } from 'elysia'
import { operation } from '../http/operation'
import { resourceOperations } from '../http/resource-operations'
import { Inbox } from './model'
import { deleteInbox, getInbox, listInboxes } from '../mail/inbox-queries'
import { createInbox, presentManagedInbox } from './service'

const TAG = 'Inbox'

const inbox = resourceOperations('/v1/inboxes', { tag: TAG, resource: 'inbox', output: Inbox, present: presentManagedInbox, type: 'Inbox' })

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
  inbox.list({
    name: 'list_inboxes',
    summary: 'List inboxes',
    description: 'The email addresses of this organization, newest first.',
    graphql: { field: 'inboxes', description: 'Managed inboxes, newest first (as GET /v1/inboxes).' },
    scope: ({ auth }) => `inboxes:${auth.orgId}`,
    fetch: listInboxes,
  }),
  inbox.get({ name: 'get_inbox', summary: 'Get an inbox', graphql: 'inbox', find: getInbox }),
  inbox.delete({
    name: 'delete_inbox',
    summary: 'Delete an inbox',
    description: 'Deletes the inbox at once: mail to its address is refused from then on, and the address may be taken again. Mail already received stays.',
    remove: deleteInbox,
  }),
]
