/**
 * GET and POST /drafts/approval: the page of a one-time approval link (links.ts), built like the
 * OAuth and CLI pages (same helpers, escaping, policy and headers; no scripts):
 *
 * 1. GET with the link's token shows the draft (sender, recipients, subject, text, attachments)
 *    and a form with a reason and two buttons, Approve and Reject.
 * 2. POST of that form decides. Against cross-site requests, the form carries a CSRF token, an
 *    HMAC of the link and of a random id kept in an HttpOnly SameSite cookie set by the GET, so
 *    only the browser that loaded the page can post it (and a request whose Origin is another
 *    site is refused). Against replay, the POST uses the link up in one statement before acting:
 *    a second POST, or one after expiry, is refused (410) and changes nothing.
 */
import type { AppContext } from '../context'
import { randomToken } from '../crypto'
import { ApiError } from '../errors'
import { currentRole } from '../account/roles'
import { planDefinition } from '../account/plans'
import { planAccess } from '../account/access'
import type { Auth } from '../auth/principal'
import { browserCookie, html, htmlResponse, layout, tooManyAttempts } from '../oauth/pages'
import { readForm, throttle, type Server } from '../oauth/responses'
import { LIMITS } from '../oauth/constants'
import { APPROVAL_PAGE_PATH, linkTokenHash, LINK_TOKEN_PREFIX } from './links'
import type { DraftRow } from './model'
import { presentDraft } from './present'
import { findDraft, findLink, useLink, type LinkRow } from './queries'
import { approveDraft, rejectDraft } from './service'

const browserIds = browserCookie('draft_browser', APPROVAL_PAGE_PATH)
const CSRF_PURPOSE = 'draft-approval-form'
const TOKEN = new RegExp(`^${LINK_TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`)

function message(status: number, title: string, text: string, headers: Record<string, string> = {}): Response {
  return htmlResponse(
    layout(title, html`<h1>${title}</h1>\n<p class="${status >= 400 ? 'error' : ''}" role="${status >= 400 ? 'alert' : 'status'}">${text}</p>`),
    status,
    headers,
  )
}

const unusable = () =>
  message(410, 'This link cannot be used', 'The approval link is unknown, already used, or expired. Ask for a new one; nothing was changed.')

function draftView(d: DraftRow) {
  const v = presentDraft(d)
  const recipients = (label: string, list: string[]) => (list.length ? html`<p><strong>${label}:</strong> ${list.join(', ')}</p>\n` : '')
  return html`<p><strong>From:</strong> ${v.from_name ? `${v.from_name} <${v.from}>` : v.from}</p>
${recipients('To', v.to)}${recipients('Cc', v.cc)}${recipients('Bcc', v.bcc)}<p><strong>Subject:</strong> ${v.subject ?? '(from a template)'}</p>
${v.scheduled_at ? html`<p><strong>Scheduled for:</strong> ${v.scheduled_at}</p>\n` : ''}${v.template ? html`<p class="muted">Rendered from a stored template when sent.</p>\n` : ''}<pre>${v.body_text ?? ''}</pre>
${v.attachments.length ? html`<p><strong>Attachments:</strong> ${v.attachments.map(a => `${a.filename} (${a.size_bytes} bytes)`).join(', ')}</p>\n` : ''}`
}

const csrfFor = (ctx: AppContext, link: LinkRow, browser: string) => ctx.keys.sign(CSRF_PURPOSE, `${link.id}.${browser}`)

async function liveLink(ctx: AppContext, token: string | null | undefined): Promise<LinkRow | null> {
  if (!token || !TOKEN.test(token)) return null
  return findLink(ctx.sql, linkTokenHash(token))
}

export async function approvalPage(ctx: AppContext, request: Request, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'draft-approval', LIMITS.authorizePage)
  if (retryAfter) return tooManyAttempts(retryAfter)
  const token = new URL(request.url).searchParams.get('token')
  const link = await liveLink(ctx, token)
  const d = link?.live ? await findDraft(ctx.sql, link.org_id, link.draft_id) : null
  if (!link || !d) return unusable()
  if (d.status !== 'pending_approval')
    return message(409, 'Already decided', `This message is ${d.status.replace('_', ' ')}; there is nothing left to approve.`)
  const browser = browserIds.read(request) ?? randomToken('')
  const page = layout(
    'Approve this message?',
    html`<h1>Approve this message?</h1>
<p>An agent wants to send this message. Approve it to send it now, or reject it with a reason the agent will see.</p>
${draftView(d)}<form method="post" action="${APPROVAL_PAGE_PATH}">
<input type="hidden" name="token" value="${token}">
<input type="hidden" name="csrf_token" value="${csrfFor(ctx, link, browser)}">
<label for="reason">Reason (for a rejection)</label>
<input id="reason" type="text" name="reason" maxlength="1000">
<div class="actions">
<button type="submit" name="action" value="approve">Approve and send</button>
<button type="submit" name="action" value="reject" class="secondary">Reject</button>
</div>
</form>
<p class="muted">This link works once, until ${link.expires_at.toISOString()}.</p>`,
  )
  return htmlResponse(page, 200, { 'set-cookie': browserIds.header(browser, ctx.config.PUBLIC_URL.startsWith('https:')) })
}

/** The credential a link acts with: its maker's, as they are now (null when they are no owner or admin any more). */
async function makerOf(ctx: AppContext, link: LinkRow): Promise<Auth | null> {
  const role = await currentRole(ctx.sql, link.org_id, link.created_by)
  if (role !== 'owner' && role !== 'admin') return null
  const { plan } = await planAccess(ctx.sql, link.org_id)
  return {
    orgId: link.org_id,
    keyId: `approval-link:${link.id}`,
    userId: link.created_by,
    role,
    method: 'api_key',
    plan,
    apiPerMinute: planDefinition(plan).limits.api_per_minute,
  }
}

export async function approvalSubmit(ctx: AppContext, request: Request, body: unknown, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'draft-approval-submit', LIMITS.signIn)
  if (retryAfter) return tooManyAttempts(retryAfter)
  const origin = request.headers.get('origin')
  if (origin && origin !== new URL(ctx.config.PUBLIC_URL).origin) return message(403, 'Refused', 'This form was posted from another site.')
  const read = readForm(request, body)
  if ('error' in read) return message(400, 'The form could not be read', read.error)
  const form = read.form
  const link = await liveLink(ctx, form.get('token'))
  if (!link) return unusable()
  const browser = browserIds.read(request)
  if (!browser || !ctx.keys.verify(CSRF_PURPOSE, `${link.id}.${browser}`, form.get('csrf_token') ?? '')) {
    return message(403, 'This form was not issued to this browser', 'Open the link again and decide on the page it shows.')
  }
  const action = form.get('action')
  if (action !== 'approve' && action !== 'reject') return message(400, 'The form could not be read', 'action: must be approve or reject')
  const reason = form.get('reason')?.trim().slice(0, 1000) || null
  if (!(await useLink(ctx.sql, link.id))) return unusable()
  const maker = await makerOf(ctx, link)
  if (!maker) return message(403, 'Refused', 'The person who made this link is no longer an owner or admin of the organization.')
  const decider = { via: 'link' as const, userId: link.created_by }
  try {
    if (action === 'reject') {
      await rejectDraft(ctx, link.org_id, link.draft_id, decider, reason)
      return message(200, 'Message rejected', 'Nothing was sent. The agent sees your reason on its draft.')
    }
    const d = await approveDraft(ctx, maker, link.draft_id, decider)
    return message(200, 'Message approved', d.status === 'sent' ? 'It was sent.' : 'It is being sent.')
  } catch (error) {
    if (!(error instanceof ApiError)) throw error
    const title = error.code === 'not_found' ? 'This message is gone' : error.code === 'conflict' ? 'Already decided' : 'The message was approved but not sent'
    return message(error.status, title, error.message)
  }
}
