/** The page of a one-time approval link (HTML, no credential: the link's token is the authority); the operations are in operations.ts. */
import { Elysia, t } from 'elysia'
import type { AppContext } from '../context'
import { requestFacts } from '../request-context'
import { formRequestBody } from '../oauth/responses'
import { approvalPage, approvalSubmit } from './approval-page'
import { APPROVAL_PAGE_PATH } from './links'

export function draftApprovalRoutes(ctx: AppContext) {
  return (
    new Elysia({ tags: ['Drafts'] })
      // the handlers answer with Responses of their own; the request log line should show their status
      .onAfterHandle(({ request, response }) => {
        if (response instanceof Response) requestFacts(request).status = response.status
      })
      .get(APPROVAL_PAGE_PATH, ({ request, server }) => approvalPage(ctx, request, server), {
        query: t.Object({ token: t.Optional(t.String({ description: 'the token of the link' })) }, { additionalProperties: true }),
        detail: {
          summary: 'Approval page of a draft (HTML)',
          security: [],
          description:
            'The page of a one-time approval link (POST /v1/drafts/{id}/approval-link): the draft and a form to approve or reject it. 410 for a used, expired or unknown link.',
        },
      })
      .post(APPROVAL_PAGE_PATH, ({ request, body, server }) => approvalSubmit(ctx, request, body, server), {
        parse: 'text',
        detail: {
          summary: 'Submit the approval page of a draft (HTML form)',
          security: [],
          description:
            'Needs the cookie the page set and its csrf_token; uses the link up (a second post is 410). Approve sends the draft; reject keeps the reason.',
          requestBody: formRequestBody(
            {
              token: { type: 'string' },
              csrf_token: { type: 'string' },
              action: { type: 'string', enum: ['approve', 'reject'] },
              reason: { type: 'string', maxLength: 1000 },
            },
            ['token', 'csrf_token', 'action'],
          ),
        },
      })
  )
}
