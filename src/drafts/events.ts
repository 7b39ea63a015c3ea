/**
 * `draft.pending_approval`, `draft.approved` and `draft.rejected`: a change in the feed and a
 * webhook event (to the HTTP endpoints whose `rules.event_types` list the type), written in the
 * transaction that moves the draft, last (see changes/record.ts). The event carries the draft as
 * GET /v1/drafts/{id} shows it; the feed's change and every endpoint's copy share one event id.
 */
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { eventId, recordChanges } from '../changes/record'
import { enqueueOrgEvent } from '../webhooks/org-events'
import type { DraftRow } from './model'
import { presentDraft } from './present'

export const DRAFT_EVENTS = ['draft.pending_approval', 'draft.approved', 'draft.rejected'] as const
export type DraftEvent = (typeof DRAFT_EVENTS)[number]

export async function recordDraftEvent(tx: Tx, ctx: AppContext, type: DraftEvent, d: DraftRow): Promise<void> {
  const id = eventId()
  const draft = presentDraft(d)
  const deliveries = await enqueueOrgEvent(tx, ctx, d.org_id, type, { draft }, id)
  await recordChanges(tx, [
    {
      id,
      orgId: d.org_id,
      type,
      resource: { type: 'draft', id: d.id },
      addresses: [d.from_address],
      data: {
        draft_id: d.id,
        status: d.status,
        from: draft.from,
        to: draft.to,
        subject: draft.subject,
        decided_by: draft.decided_by,
        rejection_reason: d.rejection_reason,
      },
    },
    ...deliveries,
  ])
}
