/**
 * One-time approval links: a URL of the approval page (approval-page.ts) carrying a token of 256
 * random bits, stored as its SHA-256, so only the holder of the URL can use it. A link acts on
 * the authority of the owner or admin who made it (or who set the policy that mailed it), whose
 * role is checked again when it is used; it works once, until it expires. The service mails it
 * to a person on request, or to the policy's notify_email when a draft starts waiting.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { randomToken, sha256 } from '../crypto'
import { iso } from '../http/timestamps'
import type { JobKind } from '../jobs/kind'
import { sendSystemMail } from '../sending/system-mail'
import { LINK_DEFAULT_SECONDS, type DraftRow } from './model'
import { presentDraft } from './present'
import { findDraft, insertLink, policyFor } from './queries'

export const LINK_TOKEN_PREFIX = 'dal_'
export const APPROVAL_PAGE_PATH = '/drafts/approval'

export const linkTokenHash = (token: string) => sha256(token)

function approvalMail(d: DraftRow, url: string, expiresAt: Date) {
  const draft = presentDraft(d)
  const subject = draft.subject ?? '(from a template)'
  return {
    subject: `Approve a message from ${d.from_address}: ${subject}`.slice(0, 200),
    text: [
      `${d.from_address} wants to send a message that needs your approval.`,
      '',
      `To: ${[...draft.to, ...draft.cc, ...draft.bcc].join(', ')}`,
      `Subject: ${subject}`,
      '',
      `Read it and approve or reject it here (the link works once, until ${expiresAt.toISOString()}):`,
      url,
    ].join('\n'),
  }
}

/** Makes a link to approve or reject the draft, mailed to `sendTo` when given. */
export async function issueLink(ctx: AppContext, d: DraftRow, createdBy: string | null, sendTo: string | null, seconds: number) {
  const token = randomToken(LINK_TOKEN_PREFIX)
  const expiresAt = await insertLink(ctx.sql, {
    id: randomUUIDv7(),
    orgId: d.org_id,
    draftId: d.id,
    tokenHash: linkTokenHash(token),
    createdBy,
    sentTo: sendTo,
    seconds,
  })
  const url = `${ctx.config.PUBLIC_URL}${APPROVAL_PAGE_PATH}?token=${token}`
  if (sendTo) await sendSystemMail(ctx, { to: sendTo, ...approvalMail(d, url, expiresAt) })
  return { url, expires_at: iso(expiresAt)!, sent_to: sendTo }
}

export const NOTIFY_KIND = 'drafts.notify'

/** Mails an approval link to the policy's notify_email for a draft that started waiting (if it still waits). */
export const notifyJob: JobKind<{ draft_id: string; org_id: string }> = {
  kind: NOTIFY_KIND,
  async handle(ctx, payload) {
    const d = await findDraft(ctx.sql, payload.org_id, payload.draft_id)
    if (d?.status !== 'pending_approval') return
    const policy = await policyFor(ctx.sql, d.org_id, d.from_address)
    if (!policy?.notify_email) return
    await issueLink(ctx, d, policy.set_by, policy.notify_email, LINK_DEFAULT_SECONDS)
  },
  retryDelaySeconds: (_ctx, attempt) => Math.min(600, 10 * 2 ** attempt),
}
