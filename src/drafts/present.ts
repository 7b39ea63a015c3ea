/** Drafts and approval policies as the API shows them. */
import type { Static } from 'elysia'
import { iso } from '../http/timestamps'
import type { ApprovalPolicy, Draft, DraftRow } from './model'
import type { PolicyRow } from './queries'

const asList = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v])

export function presentDraft(d: DraftRow): Static<typeof Draft> {
  const r = d.request
  return {
    id: d.id,
    status: d.status,
    from: r.from,
    from_name: r.from_name ?? null,
    to: asList(r.to),
    cc: r.cc ?? [],
    bcc: r.bcc ?? [],
    reply_to: asList(r.reply_to),
    subject: r.subject ?? null,
    body_text: r.body_text ?? null,
    body_html: r.body_html ?? null,
    template: r.template ?? null,
    attachments: (r.attachments ?? []).map(a => ({
      filename: a.filename,
      content_type: a.content_type,
      size_bytes: Buffer.byteLength(a.content.replace(/\s/g, ''), 'base64'),
    })),
    headers: r.headers ?? {},
    in_reply_to_email_id: r.in_reply_to_email_id ?? null,
    scheduled_at: r.scheduled_at ? new Date(r.scheduled_at).toISOString() : null,
    repeat: r.repeat ?? null,
    send_id: d.send_id,
    send_error: d.send_error,
    decided_by: d.decided_via ? { via: d.decided_via, user_id: d.decided_by } : null,
    decided_at: iso(d.decided_at),
    rejection_reason: d.rejection_reason,
    created_at: iso(d.created_at)!,
    updated_at: iso(d.updated_at)!,
  }
}

export const presentPolicy = (address: string, p: PolicyRow | null): Static<typeof ApprovalPolicy> => ({
  address,
  approval_required: p !== null,
  notify_email: p?.notify_email ?? null,
  created_at: iso(p?.created_at ?? null),
  updated_at: iso(p?.updated_at ?? null),
})
