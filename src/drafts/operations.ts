/**
 * Drafts and approval policies as operations (src/http/operation.ts): REST under /v1/drafts and
 * /v1/approval-policies, MCP tools, and GraphQL's `drafts` and `draft`. The approval page of a
 * one-time link (no credential) is in routes.ts.
 */
import { t } from 'elysia'
import { listOperation, operation } from '../http/operation'
import { Address, Deleted, IdParam, OneOf } from '../http/schema'
import { SEND_MAIL_MAX_BODY_BYTES, SendMailBody } from '../sending/model'
import { ApprovalLink, ApprovalPolicy, DRAFT_STATES, Draft, LINK_DEFAULT_SECONDS, LINK_MAX_SECONDS, PolicyInput, RejectionReason } from './model'
import { getPolicy, listPolicies, setPolicy } from './policies'
import { presentDraft, presentPolicy } from './present'
import {
  approveDraft,
  createApprovalLink,
  createDraft,
  deleteDraft,
  getDraft,
  listDrafts,
  rejectDraft,
  requireApprover,
  sendDraft,
  updateDraft,
} from './service'

const TAG = 'Drafts'
const POLICIES = 'Approval policies'
const AddressParam = { address: t.String({ minLength: 3, maxLength: 320, description: 'a sender address of the organization' }) }
const WHO_APPROVES =
  "Needs an API key or OAuth token of a person who is an owner or admin now (403 forbidden otherwise): an agent's connection key cannot, nor a function's runtime key."

export const draftOperations = [
  operation({
    name: 'create_draft',
    method: 'POST',
    path: '/v1/drafts',
    tag: TAG,
    summary: 'Create a draft',
    description:
      'Keeps a message to send later: the body of POST /v1/send-mail, validated the same way (scheduled_at and repeat apply when it is sent). Nothing is sent until POST /v1/drafts/{id}/send.',
    input: SendMailBody,
    bodyLimit: SEND_MAIL_MAX_BODY_BYTES,
    status: 201,
    output: Draft,
    handle: async ({ ctx, auth }, body) => presentDraft(await createDraft(ctx, auth, body)),
  }),
  listOperation({
    name: 'list_drafts',
    method: 'GET',
    path: '/v1/drafts',
    tag: TAG,
    summary: 'List drafts',
    description: 'The drafts of the organization (a connection key: of its address), newest first; `status=pending_approval` lists what waits for approval.',
    input: t.Object({ status: t.Optional(OneOf(DRAFT_STATES, { description: 'only drafts in this state' })) }),
    graphql: { field: 'drafts', type: 'Draft', args: { status: 'String' }, description: 'Drafts, newest first (as GET /v1/drafts).' },
    list: {
      item: Draft,
      scope: ({ auth }) => `drafts:${auth.orgId}:${auth.boundAddress ?? ''}`,
      fetch: ({ ctx, auth }, { status }, page) => listDrafts(ctx, auth, page, status),
      present: presentDraft,
    },
  }),
  operation({
    name: 'get_draft',
    method: 'GET',
    path: '/v1/drafts/:id',
    tag: TAG,
    summary: 'Get a draft',
    params: IdParam,
    resource: 'draft',
    output: Draft,
    graphql: { field: 'draft', type: 'Draft' },
    handle: async ({ ctx, auth }, { id }) => presentDraft(await getDraft(ctx, auth, id)),
  }),
  operation({
    name: 'update_draft',
    method: 'PATCH',
    path: '/v1/drafts/:id',
    tag: TAG,
    summary: 'Change a draft',
    description:
      "The fields given replace the draft's; the result is validated as a send. Only while its status is draft (409 conflict after it was sent or submitted for approval).",
    params: IdParam,
    resource: 'draft',
    input: t.Partial(SendMailBody, { minProperties: 1 }),
    bodyLimit: SEND_MAIL_MAX_BODY_BYTES,
    output: Draft,
    handle: async ({ ctx, auth }, { id, ...patch }) => presentDraft(await updateDraft(ctx, auth, id, patch)),
  }),
  operation({
    name: 'delete_draft',
    method: 'DELETE',
    path: '/v1/drafts/:id',
    tag: TAG,
    summary: 'Delete a draft',
    description: 'Also withdraws a draft pending approval. 409 conflict while its send is being made.',
    params: IdParam,
    resource: 'draft',
    output: Deleted,
    handle: async ({ ctx, auth }, { id }) => ({ ...(await deleteDraft(ctx, auth, id)), deleted: true as const }),
  }),
  operation({
    name: 'send_draft',
    method: 'POST',
    path: '/v1/drafts/:id/send',
    tag: TAG,
    summary: 'Send a draft',
    description:
      'Sends the draft as POST /v1/send-mail would (status sent, send_id), once: sending it again answers it as it is. ' +
      'When its sender address has an approval policy, nothing is sent: 202 with status pending_approval, until an owner or admin approves or rejects it. ' +
      "A failed send keeps status sending with send_error, answers the send's error, and is tried again by sending again.",
    params: IdParam,
    resource: 'draft',
    mayAccept: true,
    output: Draft,
    mcp: { hints: { openWorldHint: true, idempotentHint: true } },
    handle: async (call, { id }) => {
      const d = await sendDraft(call.ctx, call.auth, id)
      if (d.status === 'pending_approval') call.status?.(202)
      return presentDraft(d)
    },
  }),
  operation({
    name: 'approve_draft',
    method: 'POST',
    path: '/v1/drafts/:id/approve',
    tag: TAG,
    summary: 'Approve a draft pending approval: it is sent',
    description: `Sends it at once (status sent, send_id), under its own Idempotency-Key: approving again never sends twice. 409 conflict when it was rejected or not submitted. ${WHO_APPROVES}`,
    params: IdParam,
    resource: 'draft',
    output: Draft,
    mcp: { hints: { openWorldHint: true, idempotentHint: true } },
    handle: async ({ ctx, auth }, { id }) => {
      await requireApprover(ctx, auth)
      return presentDraft(await approveDraft(ctx, auth, id, { via: 'api', userId: auth.userId }))
    },
  }),
  operation({
    name: 'reject_draft',
    method: 'POST',
    path: '/v1/drafts/:id/reject',
    tag: TAG,
    summary: 'Reject a draft pending approval',
    description: `Nothing is sent; the draft keeps the reason (rejection_reason). 409 conflict when it was sent or not submitted. ${WHO_APPROVES}`,
    params: IdParam,
    resource: 'draft',
    input: t.Object({ reason: t.Optional(RejectionReason) }),
    bodyOptional: true,
    output: Draft,
    mcp: { hints: { idempotentHint: true } },
    handle: async ({ ctx, auth }, { id, reason }) => {
      await requireApprover(ctx, auth)
      return presentDraft(await rejectDraft(ctx, auth.orgId, id, { via: 'api', userId: auth.userId }, reason ?? null))
    },
  }),
  operation({
    name: 'create_draft_approval_link',
    method: 'POST',
    path: '/v1/drafts/:id/approval-link',
    tag: TAG,
    summary: 'A one-time link to approve or reject a draft in a browser',
    description:
      'A page of the service shows the draft with two buttons (no sign-in, no JavaScript); the link acts with your authority, works once and expires. ' +
      `With send_to, the service mails it to that person. 409 conflict unless the draft is pending approval. ${WHO_APPROVES}`,
    params: IdParam,
    resource: 'draft',
    input: t.Object({
      send_to: t.Optional(Address),
      expires_in: t.Optional(
        t.Integer({
          minimum: 60,
          maximum: LINK_MAX_SECONDS,
          description: `seconds the link works, 60 to ${LINK_MAX_SECONDS} (default ${LINK_DEFAULT_SECONDS})`,
        }),
      ),
    }),
    bodyOptional: true,
    status: 201,
    output: ApprovalLink,
    handle: ({ ctx, auth }, { id, send_to, expires_in }) =>
      createApprovalLink(ctx, auth, id, send_to?.toLowerCase() ?? null, expires_in ?? LINK_DEFAULT_SECONDS),
  }),
]

export const approvalPolicyOperations = [
  listOperation({
    name: 'list_approval_policies',
    method: 'GET',
    path: '/v1/approval-policies',
    tag: POLICIES,
    summary: 'List approval policies',
    description: 'The sender addresses whose sends wait for approval.',
    list: {
      item: ApprovalPolicy,
      scope: ({ auth }) => `approval-policies:${auth.orgId}`,
      fetch: ({ ctx, auth }, _args, page) => listPolicies(ctx, auth, page),
      present: p => presentPolicy(p.address, p),
    },
  }),
  operation({
    name: 'get_approval_policy',
    method: 'GET',
    path: '/v1/approval-policies/:address',
    tag: POLICIES,
    summary: 'The approval policy of a sender address',
    description: 'approval_required false when the address has none.',
    params: AddressParam,
    output: ApprovalPolicy,
    handle: ({ ctx, auth }, { address }) => getPolicy(ctx, auth, address),
  }),
  operation({
    name: 'set_approval_policy',
    method: 'PUT',
    path: '/v1/approval-policies/:address',
    tag: POLICIES,
    summary: 'Require approval for the sends of a sender address, or stop requiring it',
    description:
      'With approval_required true, every send from the address (POST /v1/send-mail, the send of a draft, a connection key bound to it) becomes a draft pending approval, ' +
      'and notify_email, if given, is mailed a one-time approval link for each. The address must be a sender of the organization (403 cannot_send_from_domain). ' +
      WHO_APPROVES,
    params: AddressParam,
    input: PolicyInput,
    output: ApprovalPolicy,
    handle: ({ ctx, auth }, { address, ...input }) => setPolicy(ctx, auth, address, input),
  }),
]
