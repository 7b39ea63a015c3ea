/**
 * Signing in to the console with the service's own accounts (the password check of the OAuth
 * and CLI approval pages, oauth/sign-in.ts), and out. The sign-in form is bound to the browser
 * that loaded it: a random cookie and a CSRF token derived from it, so another site cannot sign
 * a visitor in to an account of its choosing (login CSRF).
 */
import { membershipsOf } from '../account/membership-queries'
import type { AppContext } from '../context'
import { randomToken } from '../crypto'
import { readForm, throttle, type Server } from '../oauth/responses'
import { verifyPassword } from '../oauth/sign-in'
import { html, layout, PAGE_HEADERS } from './layout'
import { redirect } from './visit'
import { clearedCookie, endSession, sessionCookie, startSession } from './session'

const FORM_COOKIE = 'console_signin'
const FORM_ID = /^cf_[A-Za-z0-9_-]{43}$/
const SIGN_INS_PER_MINUTE = 10

function formCookieOf(request: Request): string | null {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const [name, value] = part.trim().split('=')
    if (name === FORM_COOKIE && value && FORM_ID.test(value)) return value
  }
  return null
}

function page(ctx: AppContext, status: number, error?: string, email = '', formId = randomToken('cf_')): Response {
  const csrf = ctx.keys.sign('console-signin', formId)
  const body = html`<p>Sign in with the email address and password of your account.</p>
${error ? html`<p class="error-box" role="alert">${error}</p>` : ''}
<form method="post" action="/console/sign-in" hx-boost="false">
<input type="hidden" name="csrf_token" value="${csrf}">
<label for="email">Email address</label>
<input id="email" type="email" name="email" autocomplete="username" required value="${email}">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`
  const secure = ctx.config.NODE_ENV === 'production' || ctx.config.PUBLIC_URL.startsWith('https:')
  return new Response(layout('Sign in', body), {
    status,
    headers: { ...PAGE_HEADERS, 'set-cookie': `${FORM_COOKIE}=${formId}; Path=/console; HttpOnly; SameSite=Lax; Max-Age=3600${secure ? '; Secure' : ''}` },
  })
}

export const signInPage = (ctx: AppContext) => page(ctx, 200)

export async function signIn(ctx: AppContext, request: Request, body: unknown, server: Server): Promise<Response> {
  const retryAfter = await throttle(ctx, request, server, 'console.sign-in', SIGN_INS_PER_MINUTE)
  if (retryAfter) return page(ctx, 429, `Too many attempts from this address. Wait ${retryAfter} seconds, then try again.`)
  const read = readForm(request, body)
  if ('error' in read) return page(ctx, 400, `body: ${read.error}`)
  const { form } = read
  const formId = formCookieOf(request)
  const csrf = form.get('csrf_token')
  if (!formId || !csrf || !ctx.keys.verify('console-signin', formId, csrf)) {
    return page(ctx, 403, 'csrf_token: this form was not loaded in this browser; try again.', form.get('email') ?? '')
  }
  const email = form.get('email') ?? ''
  const userId = await verifyPassword(ctx.sql, email, form.get('password') ?? '')
  if (!userId) return page(ctx, 401, 'email, password: no account matches this email address and password.', email, formId)
  const [first] = await membershipsOf(ctx.sql, userId)
  if (!first) return page(ctx, 403, 'This account belongs to no organization yet; an owner must add it first.', email, formId)
  const token = await startSession(ctx.sql, userId, first.org_id)
  return redirect('/console/inboxes', { 'set-cookie': sessionCookie(ctx, token), 'cache-control': 'no-store' })
}

export async function signOut(ctx: AppContext, sessionId: string): Promise<Response> {
  await endSession(ctx.sql, sessionId)
  return redirect('/console/sign-in', { 'set-cookie': clearedCookie(ctx) })
}
