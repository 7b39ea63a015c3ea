/** Sends as operations (src/http/operation.ts): the sent mail of the organization. */
import { listOperation } from '../http/operation'
import { SentEmail } from './model'
import { listSends, presentSend } from './service'

export const sendingOperations = [
  listOperation({
    name: 'list_sent_emails',
    method: 'GET',
    path: '/v1/sent-emails',
    tag: 'Sending',
    summary: 'List sent emails',
    description: 'The sends of the organization, newest first, each in its current state (as GET /v1/sent-emails/{id} answers it).',
    graphql: { field: 'sentEmails', type: 'SentEmail', description: 'Sends (POST /v1/send-mail), newest first (as GET /v1/sent-emails).' },
    list: {
      item: SentEmail,
      scope: ({ auth }) => `sent-emails:${auth.orgId}`,
      fetch: ({ ctx, auth }, _args, page) => listSends(ctx, auth.orgId, page),
      present: presentSend,
    },
  }),
]
