/** Inbox tools: the managed addresses of the organization (the Inbox routes). */
import { Type } from '@sinclair/typebox'
import { Inbox } from '../../inboxes/model'
import { createInbox, getInbox, listInboxes, presentManagedInbox } from '../../inboxes/service'
import { PageInput, PageOf, toolPage } from '../schema'
import { READ, tool, WRITE } from '../tool'

export const inboxTools = [
  tool({
    name: 'create_inbox',
    title: 'Create an inbox',
    description: 'Creates a new email address under the managed domain for this organization. Without local_part the address is random.',
    input: Type.Object({
      local_part: Type.Optional(
        Type.String({ minLength: 1, maxLength: 63, description: 'the part before @; letters, digits, ".", "_", "-"; role names are reserved' }),
      ),
      display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'the name shown in From' })),
    }),
    output: Inbox,
    annotations: WRITE,
    rest: { method: 'POST', path: '/v1/inboxes' },
    handle: async ({ ctx, auth }, args) => presentManagedInbox(await createInbox(ctx.sql, auth.orgId, ctx.config.MANAGED_DOMAIN, args)),
  }),
  tool({
    name: 'list_inboxes',
    title: 'List inboxes',
    description: 'The email addresses of this organization, newest first.',
    input: Type.Object(PageInput),
    output: PageOf(Inbox),
    annotations: READ,
    rest: { method: 'GET', path: '/v1/inboxes' },
    handle: async ({ ctx, auth }, args) => {
      const scope = `inboxes:${auth.orgId}`
      return toolPage(ctx, scope, args, page => listInboxes(ctx.sql, auth.orgId, page), presentManagedInbox)
    },
  }),
  tool({
    name: 'get_inbox',
    title: 'Get an inbox',
    description: 'One inbox by id.',
    input: Type.Object({ inbox_id: Type.String({ format: 'uuid' }) }),
    output: Inbox,
    annotations: READ,
    rest: { method: 'GET', path: '/v1/inboxes/:id' },
    handle: async ({ ctx, auth }, args) => presentManagedInbox(await getInbox(ctx.sql, auth.orgId, args.inbox_id)),
  }),
]
