/**
 * Drafts and approval policies as the API returns them. A draft holds a send-mail request (the
 * same fields, validated the same way: src/sending/model.ts) until it is sent, or until an owner
 * or admin approves it when its sender's approval policy says so.
 */
import { t, type Static } from 'elysia'
import { Address, Nullable, OneOf } from '../http/schema'
import type { SendMailRequest } from '../sending/model'

/**
 * draft: editable, not sent; pending_approval: waits for an owner or admin; sending: its send is
 * being made (or failed and may be tried again, send_error); sent: send_id is its send;
 * rejected: refused, with the reason.
 */
export const DRAFT_STATES = ['draft', 'pending_approval', 'sending', 'sent', 'rejected'] as const
export type DraftState = (typeof DRAFT_STATES)[number]

const Addresses = (description: string) => t.Array(t.String(), { description })

export const Draft = t.Object({
  id: t.String({ format: 'uuid' }),
  status: OneOf(DRAFT_STATES, {
    description:
      'draft (editable), pending_approval (waits for an owner or admin), sending (its send is being made; after a failure, send_error says why and sending or approving again retries), sent (send_id), rejected (rejection_reason)',
  }),
  from: t.String(),
  from_name: Nullable(t.String()),
  to: Addresses('the recipients, as a list'),
  cc: Addresses('carbon-copy recipients'),
  bcc: Addresses('blind recipients'),
  reply_to: Addresses('Reply-To addresses'),
  subject: Nullable(t.String()),
  body_text: Nullable(t.String()),
  body_html: Nullable(t.String()),
  template: Nullable(t.Record(t.String(), t.Unknown(), { description: 'the stored template it is rendered from, as given' })),
  attachments: t.Array(t.Object({ filename: t.String(), content_type: t.String(), size_bytes: t.Integer() }), {
    description: 'the files it carries (their content is kept, not shown)',
  }),
  headers: t.Record(t.String(), t.String()),
  in_reply_to_email_id: Nullable(t.String({ format: 'uuid' })),
  scheduled_at: Nullable(t.String({ format: 'date-time' })),
  repeat: Nullable(t.Object({ every_minutes: t.Integer() })),
  send_id: Nullable(t.String({ format: 'uuid', description: 'the send it became (GET /v1/sent-emails/{id})' })),
  send_error: Nullable(t.Object({ code: t.String(), message: t.String() }, { description: 'why the last attempt to send it failed' })),
  decided_by: Nullable(
    t.Object(
      { via: OneOf(['api', 'link'] as const), user_id: Nullable(t.String({ format: 'uuid' })) },
      { description: 'who approved or rejected it: through the API, or through an approval link made by that person' },
    ),
  ),
  decided_at: Nullable(t.String({ format: 'date-time' })),
  rejection_reason: Nullable(t.String()),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

/** A draft as stored (the `drafts` table). */
export interface DraftRow {
  id: string
  org_id: string
  status: DraftState
  request: SendMailRequest
  from_address: string
  send_key: string
  send_id: string | null
  send_error: { code: string; message: string } | null
  decided_via: 'api' | 'link' | null
  decided_by: string | null
  decided_at: Date | null
  rejection_reason: string | null
  created_at: Date
  updated_at: Date
}

export const RejectionReason = t.String({ minLength: 1, maxLength: 1000, description: 'why; kept on the draft and shown to its sender' })

export const ApprovalPolicy = t.Object({
  address: t.String({ description: 'the sender address (lowercase) whose sends wait for approval' }),
  approval_required: t.Boolean(),
  notify_email: Nullable(t.String({ description: 'who is mailed a one-time approval link for each draft that starts waiting' })),
  created_at: Nullable(t.String({ format: 'date-time' })),
  updated_at: Nullable(t.String({ format: 'date-time' })),
})

export const PolicyInput = t.Object({
  approval_required: t.Boolean({ description: 'true: sends from this address become drafts pending approval; false removes the policy' }),
  notify_email: t.Optional(Nullable(Address)),
})
export type PolicyInput = Static<typeof PolicyInput>

/** The longest and default life of an approval link, in seconds. */
export const LINK_MAX_SECONDS = 7 * 86400
export const LINK_DEFAULT_SECONDS = 86400

export const ApprovalLink = t.Object({
  url: t.String({ description: 'the page where a person approves or rejects the draft; works once, no sign-in, no JavaScript' }),
  expires_at: t.String({ format: 'date-time' }),
  sent_to: Nullable(t.String({ description: 'the address it was mailed to' })),
})
