/**
 * GET and POST /cli/device: where a person approves a `cli login` in the browser. Built like the
 * OAuth authorization page (same page helpers, escaping, policy and headers, same sign-in):
 *
 * 1. GET shows a form for the user code (prefilled from verification_uri_complete), the email
 *    address and the password. The page is kept for 15 minutes, bound to this browser (an
 *    HttpOnly cookie) and to this form (a CSRF token), both stored hashed.
 * 2. POST with the three signs the person in and finds the pending login; the next page shows
 *    the device, repeats the code for comparison with the terminal, and lists the person's
 *    organizations.
 * 3. POST with approve and an org_id approves the login for that organization; deny denies it.
 *    Either completes the page.
 */
import { randomUUIDv7 } from 'bun'
import type { AppContext } from '../context'
import { randomToken, safeEqual, sha256 } from '../crypto'
import type { Tx } from '../db/client'
import { LIMITS } from '../oauth/constants'
import { browserCookie, html, htmlResponse, layout, orgChoice, tooManyAttempts } from '../oauth/pages'
import { membershipsOf, type Membership } from '../account/membership-queries'
import { readForm, throttle, throttleKey, type Server } from '../oauth/responses'
import { verifyPassword } from '../oauth/sign-in'
import { displayUserCode, normalizeUserCode } from './login.service'
import { completePage, decideDevice, findPendingDevice, insertPage, pageById, setPageUser, type PageRow, type PendingDevice } from './queries'

const browserIds = browserCookie('cli_browser', '/cli')
const PAGE_TTL_SECONDS = 15 * 60
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const respond = (body: string, status: number, headers: Record<string, string> = {}) => htmlResponse(body, status, headers)

function refused(status: number, title: string, message: string, headers: Record<string, string> = {}): Response {
  return respond(
    layout(
      title,
      html`<h1>${title}</h1>
<p class="error" role="alert">${message}</p>
<p class="muted">Nothing was approved. Run <code>login</code> in your terminal again to get a new code.</p>`,
    ),
    status,
    headers,
  )
}

interface View {
  pageId: string
  csrf: string
  error?: string
}

const hidden = (v: View) => html`<input type="hidden" name="page_id" value="${v.pageId}">
<input type="hidden" name="csrf_token" value="${v.csrf}">`
const alert = (v: View) => (v.error ? html`<p class="error" role="alert">${v.error}</p>` : '')

export function signInPage(v: View & { userCode?: string; email?: string }): string {
  return layout(
    'Sign in to the CLI',
    html`<h1>Sign in to the command line</h1>
<p>Enter the code your terminal shows, then sign in. Continue only if you started <code>login</code> yourself, on a device you use.</p>
${alert(v)}
<form method="post" action="/cli/device">
${hidden(v)}
<label for="user_code">Code from your terminal</label>
<input id="user_code" type="text" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="20" required placeholder="XXXX-XXXX" value="${v.userCode ?? ''}">
<label for="email">Email address</label>
<input id="email" type="email" name="email" autocomplete="username" required value="${v.email ?? ''}">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<div class="actions">
<button type="submit" name="action" value="continue">Continue</button>
</div>
</form>`,
  )
}

export function confirmPage(v: View & { device: PendingDevice; orgs: Membership[] }): string {
  const what = [v.device.client_name, v.device.device_name && `on ${v.device.device_name}`].filter(Boolean).join(' ') || 'A command-line client'
  return layout(
    'Approve this device',
    html`<h1>Approve this device?</h1>
<p><strong>${what}</strong> asks for full API access (<code>service:api</code>) to one of your organizations.</p>
<p>Check that your terminal shows this code: <strong id="confirm-code">${displayUserCode(v.device.user_code)}</strong>. If it does not, or you did not start this, deny.</p>
${alert(v)}
<form method="post" action="/cli/device">
${hidden(v)}
${orgChoice(v.orgs, 'The CLI', { value: 'approve', label: 'Approve' })}
</form>`,
  )
}

function donePage(approved: boolean): string {
  const title = approved ? 'Device approved' : 'Request denied'
  return layout(
    title,
    html`<h1>${title}</h1>
<p role="status">${approved ? 'The command line is signed in. You can close this window and go back to your terminal.' : 'Nothing was approved. The command line will report that the login was denied.'}</p>`,
  )
}

async function findPage(sql: Tx, id: string): Promise<PageRow | null> {
  if (!UUID.test(id)) return null
  return (await pageById(sql, id)) ?? null
}

export async function devicePage(ctx: AppContext, request: Request, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'cli-device', LIMITS.authorizePage)
  if (retryAfter) return tooManyAttempts(retryAfter)
  const browser = browserIds.read(request) ?? randomToken('')
  const csrf = randomToken('')
  const id = randomUUIDv7()
  await insertPage(ctx.sql, { id, csrfHash: sha256(csrf), browserHash: sha256(browser), ttlSeconds: PAGE_TTL_SECONDS })
  const cookie = browserIds.header(browser, ctx.config.PUBLIC_URL.startsWith('https:'))
  const given = new URL(request.url).searchParams.get('user_code')
  const userCode = given ? normalizeUserCode(given) : null
  return respond(signInPage({ pageId: id, csrf, userCode: userCode ? displayUserCode(userCode) : undefined }), 200, { 'set-cookie': cookie })
}

export async function deviceSubmit(ctx: AppContext, request: Request, body: unknown, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'cli-device-submit', LIMITS.signIn)
  if (retryAfter) return tooManyAttempts(retryAfter)
  const read = readForm(request, body)
  if ('error' in read) return refused(400, 'The form could not be read', read.error)
  const form = read.form
  const page = await findPage(ctx.sql, form.get('page_id') ?? '')
  if (!page?.live || page.completed_at)
    return refused(400, 'This page has expired', 'The sign-in page is unknown, expired or already finished. Reload it to start over.')
  const csrf = form.get('csrf_token') ?? ''
  if (!safeEqual(sha256(csrf), page.csrf_hash) || !safeEqual(sha256(browserIds.read(request) ?? ''), page.browser_hash)) {
    return refused(403, 'This form was not issued to this browser', 'The form does not belong to this browser session.')
  }
  const view: View = { pageId: page.id, csrf }

  if (!page.user_id || !page.device_code_id) {
    const email = form.get('email')
    const password = form.get('password')
    const typed = form.get('user_code')
    const again = (error: string, status: number, headers: Record<string, string> = {}) =>
      respond(signInPage({ ...view, email, userCode: typed, error }), status, headers)
    if (!email || !password || !typed) return again('Enter the code from your terminal, your email address and your password.', 400)
    const wait = await throttleKey(ctx, `sign-in-email:${email.trim().toLowerCase()}`, LIMITS.signInPerEmail)
    if (wait) return again(`Too many sign-in attempts for this account. Wait ${wait} seconds and try again.`, 429, { 'retry-after': String(wait) })
    // the password first: without it, nobody learns which codes are pending
    const userId = await verifyPassword(ctx.sql, email, password)
    if (!userId) return again('The email address or password is incorrect.', 400)
    const userCode = normalizeUserCode(typed)
    const device = userCode ? await findPendingDevice(ctx.sql, { userCode }) : null
    if (!device) return again('That code is unknown or has expired. Check your terminal, or run login again for a new code.', 400)
    await setPageUser(ctx.sql, page.id, userId, device.id)
    return respond(confirmPage({ ...view, device, orgs: await membershipsOf(ctx.sql, userId) }), 200)
  }

  const device = await findPendingDevice(ctx.sql, { id: page.device_code_id })
  if (!device) return refused(400, 'This login has expired', 'The login is no longer waiting for approval (it expired, or was approved or denied already).')
  const orgs = await membershipsOf(ctx.sql, page.user_id)
  const action = form.get('action')
  if (action !== 'approve' && action !== 'deny') return respond(confirmPage({ ...view, device, orgs, error: 'Approve or deny.' }), 400)
  const orgId = form.get('org_id')
  if (action === 'approve' && !orgs.some(o => o.org_id === orgId)) {
    return respond(
      confirmPage({
        ...view,
        device,
        orgs,
        error: orgs.length ? 'Choose one of your organizations.' : 'Your account is not a member of any organization; deny this request.',
      }),
      400,
    )
  }
  const userId = page.user_id
  const decided = await ctx.sql.begin(async tx => {
    if (!(await completePage(tx, page.id))) return false
    return decideDevice(tx, device.id, action === 'approve' ? { approve: true, userId, orgId: orgId! } : { approve: false, userId })
  })
  if (!decided) return refused(400, 'This login has expired', 'The login is no longer waiting for approval.')
  return respond(donePage(action === 'approve'), 200)
}
