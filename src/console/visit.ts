/**
 * One request of a signed-in person to the console: their session, who they act as (auth.ts of
 * the operations), the page's viewer, and the form of a POST (its CSRF token checked already).
 */
import { membershipsOf } from '../account/membership-queries'
import type { Auth } from '../auth/principal'
import type { AppContext } from '../context'
import { errors } from '../errors'
import { readForm, type Form } from '../oauth/responses'
import { type Html, layout, PAGE_HEADERS, type Viewer } from './layout'
import { authOf, csrfOf, csrfValid, findSession, type Session, sessionToken } from './session'

export interface Visit {
  ctx: AppContext
  auth: Auth
  session: Session
  viewer: Viewer
  request: Request
  url: URL
  /** the posted form of a POST */
  form: Form
}

/** A page of the console; `url` is where the browser shows it (htmx pushes it after a boosted form). */
export function render(v: Visit, title: string, body: Html, opts: { status?: number; url?: string } = {}): Response {
  const headers: Record<string, string> = { ...PAGE_HEADERS }
  if (v.request.headers.get('hx-request')) headers['hx-push-url'] = opts.url ?? v.url.pathname + v.url.search
  return new Response(layout(title, body, v.viewer, v.url.pathname), { status: opts.status ?? 200, headers })
}

/** After a POST: the page to show next (303, so a reload does not post again). */
export const redirect = (to: string, headers: Record<string, string> = {}) => new Response(null, { status: 303, headers: { location: to, ...headers } })

/** The visit of a signed-in person, or null (no session, expired, or no longer a member). */
export async function visitOf(ctx: AppContext, request: Request, body: unknown): Promise<Visit | null> {
  const token = sessionToken(request)
  const session = token ? await findSession(ctx.sql, token) : null
  if (!session) return null
  const auth = await authOf(ctx, session)
  if (!auth) return null
  const csrf = csrfOf(ctx, session)
  const viewer: Viewer = { email: session.email, orgId: session.org_id, role: auth.role, orgs: await membershipsOf(ctx.sql, session.user_id), csrf }
  let form: Form = new Map()
  if (request.method === 'POST') {
    const read = readForm(request, body)
    if ('error' in read) throw errors.validation('body', read.error)
    form = read.form
    if (!csrfValid(ctx, session, form.get('csrf_token'))) throw errors.forbidden('csrf_token: missing or not this session’s; reload the page and try again')
  }
  return { ctx, auth, session, viewer, request, url: new URL(request.url), form }
}
