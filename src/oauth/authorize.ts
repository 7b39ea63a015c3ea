/**
 * GET and POST /oauth/authorize: the sign-in page. The page flow:
 *
 * 1. GET checks the authorization request, keeps it as pending for 15 minutes and shows the
 *    sign-in form. The pending request is bound to this browser (an HttpOnly cookie) and to
 *    this form (a CSRF token); both are stored hashed.
 * 2. POST with email and password signs the person in. With an org_id of theirs the code is
 *    issued at once; otherwise the page lists their organizations (one is preselected) and a
 *    second POST with org_id issues the code.
 * 3. The code goes back as a 303 to the registered redirect URI with `code`, `state` and `iss`
 *    (RFC 9207). "Cancel"/"Deny" sends `error=access_denied` instead. A pending request
 *    completes once.
 */
import { randomUUIDv7 } from 'bun'
import { membershipsOf } from '../account/membership-queries'
import type { AppContext } from '../context'
import { randomToken, safeEqual, sha256 } from '../crypto'
import { AUTHORIZATION_REQUEST_TTL_SECONDS, CODE_PREFIX, CODE_TTL_SECONDS, LIMITS } from './constants'
import { checkAuthorizationRequest, redirectTo } from './authorization-request'
import { isMetadataDocumentId, loadMetadataClient } from './client-metadata'
import { browserCookie, chooseOrgPage, errorPage, htmlResponse, signInPage, tooManyAttempts, type PageView } from './pages'
import {
  completeAuthorizationRequest,
  findAuthorizationRequest,
  findClient,
  insertAuthorizationRequest,
  insertCode,
  setAuthorizationRequestUser,
  type AuthorizationRequestRow,
} from './queries'
import { readForm, throttle, throttleKey, type Server } from './responses'
import { verifyPassword } from './sign-in'

const browserIds = browserCookie('oauth_browser', '/oauth')

function refused(status: number, title: string, message: string, headers: Record<string, string> = {}): Response {
  return htmlResponse(errorPage(title, message), status, headers)
}

export async function authorizePage(ctx: AppContext, request: Request, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'authorize', LIMITS.authorizePage)
  if (retryAfter) return tooManyAttempts(retryAfter)
  const query = new URL(request.url).searchParams
  const clientId = query.get('client_id')
  if (clientId && isMetadataDocumentId(clientId)) {
    const loaded = await loadMetadataClient(ctx, clientId)
    if ('error' in loaded) return refused(400, 'The application could not be identified', loaded.error)
  }
  const checked = await checkAuthorizationRequest(ctx.sql, ctx.config, query)
  if (!checked.ok) return 'redirect' in checked ? checked.redirect : refused(400, checked.page.title, checked.page.message)
  const r = checked.request
  const browser = browserIds.read(request) ?? randomToken('')
  const csrf = randomToken('')
  const id = randomUUIDv7()
  await insertAuthorizationRequest(ctx.sql, {
    id,
    clientId: r.client.id,
    redirectUri: r.redirectUri,
    codeChallenge: r.codeChallenge,
    state: r.state,
    scope: r.scope,
    resource: r.resource,
    csrfHash: sha256(csrf),
    browserHash: sha256(browser),
    ttlSeconds: AUTHORIZATION_REQUEST_TTL_SECONDS,
  })
  const cookie = browserIds.header(browser, ctx.config.PUBLIC_URL.startsWith('https:'))
  const view = { clientName: r.client.client_name, redirectUri: r.redirectUri, requestId: id, csrf }
  return htmlResponse(signInPage(view), 200, { 'set-cookie': cookie }, r.redirectUri)
}

export async function authorizeSubmit(ctx: AppContext, request: Request, body: unknown, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'sign-in', LIMITS.signIn)
  if (retryAfter) return tooManyAttempts(retryAfter)
  const read = readForm(request, body)
  if ('error' in read) return refused(400, 'The form could not be read', read.error)
  const form = read.form
  const pending = await findAuthorizationRequest(ctx.sql, form.get('request_id') ?? '')
  if (!pending?.live || pending.completed_at) {
    return refused(400, 'This sign-in page has expired', 'The authorization request is unknown, expired or already finished.')
  }
  const csrf = form.get('csrf_token') ?? ''
  if (!safeEqual(sha256(csrf), pending.csrf_hash) || !safeEqual(sha256(browserIds.read(request) ?? ''), pending.browser_hash)) {
    return refused(403, 'This form was not issued to this browser', 'The sign-in form does not belong to this browser session.')
  }
  const client = await findClient(ctx.sql, pending.client_id)
  if (!client) return refused(400, 'Authorization request refused', 'The application is no longer registered.')
  const view: PageView = { clientName: client.client_name, redirectUri: pending.redirect_uri, requestId: pending.id, csrf }
  const page = (html: string, status: number, headers: Record<string, string> = {}) => htmlResponse(html, status, headers, pending.redirect_uri)

  if (form.get('action') === 'deny') return deny(ctx, pending, 'the person declined the authorization')

  let userId = pending.user_id
  const email = form.get('email')
  const password = form.get('password')
  if (email !== undefined || password !== undefined) {
    if (!email || !password) return page(signInPage({ ...view, email, error: 'Enter your email address and password.' }), 400)
    const wait = await throttleKey(ctx, `sign-in-email:${email.trim().toLowerCase()}`, LIMITS.signInPerEmail)
    if (wait)
      return page(signInPage({ ...view, email, error: `Too many sign-in attempts for this account. Wait ${wait} seconds and try again.` }), 429, {
        'retry-after': String(wait),
      })
    userId = await verifyPassword(ctx.sql, email, password)
    if (!userId) return page(signInPage({ ...view, email, error: 'The email address or password is incorrect.' }), 400)
    await setAuthorizationRequestUser(ctx.sql, pending.id, userId)
  }
  if (!userId) return page(signInPage({ ...view, error: 'Sign in first.' }), 400)

  const orgs = await membershipsOf(ctx.sql, userId)
  if (!orgs.length) return deny(ctx, pending, 'the account is not a member of any organization')
  const orgId = form.get('org_id')
  if (orgId === undefined) return page(chooseOrgPage({ ...view, orgs }), 200)
  if (!orgs.some(o => o.org_id === orgId)) return page(chooseOrgPage({ ...view, orgs, error: 'Choose one of your organizations.' }), 400)
  return issueCode(ctx, pending, userId, orgId)
}

async function issueCode(ctx: AppContext, pending: AuthorizationRequestRow, userId: string, orgId: string): Promise<Response> {
  const code = randomToken(CODE_PREFIX)
  const issued = await ctx.sql.begin(async tx => {
    if (!(await completeAuthorizationRequest(tx, pending.id))) return false
    await insertCode(tx, {
      hash: sha256(code),
      clientId: pending.client_id,
      userId,
      orgId,
      redirectUri: pending.redirect_uri,
      codeChallenge: pending.code_challenge,
      scope: pending.scope,
      resource: pending.resource,
      ttlSeconds: CODE_TTL_SECONDS,
    })
    return true
  })
  if (!issued) return refused(400, 'This sign-in page has expired', 'The authorization request was already finished.')
  return redirectTo(pending.redirect_uri, { code, state: pending.state, iss: ctx.config.PUBLIC_URL }, 303)
}

async function deny(ctx: AppContext, pending: AuthorizationRequestRow, reason: string): Promise<Response> {
  if (!(await completeAuthorizationRequest(ctx.sql, pending.id))) {
    return refused(400, 'This sign-in page has expired', 'The authorization request was already finished.')
  }
  return redirectTo(pending.redirect_uri, { error: 'access_denied', error_description: reason, state: pending.state, iss: ctx.config.PUBLIC_URL }, 303)
}
