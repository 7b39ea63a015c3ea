/**
 * The web console at /console: server-rendered pages for the people behind the agents (see
 * docs/console.md). Each page needs a session (sign-in.ts); each POST the session's CSRF token.
 * A failure is a page with the error's code and message and the API's status for it.
 */
import { Elysia } from 'elysia'
import type { AppContext } from '../context'
import { type ApiError, errors } from '../errors'
import { toApiError } from '../http/render-error'
import { log } from '../log'
import { membershipsOf } from '../account/membership-queries'
import { requestFacts } from '../request-context'
import type { Server } from '../oauth/responses'
import { asset } from './assets'
import { call } from './call'
import { createKey, keysPage, revokeKey } from './keys.pages'
import { html, layout, PAGE_HEADERS } from './layout'
import { inboxesPage, inboxPage, messageHtml, searchPage, threadPage, threadsPage } from './mail.pages'
import { decideDraft, deliveryPage, domainPage, domainsPage, draftsPage, functionPage, functionsPage, paymentsPage, replay, webhooksPage } from './ops.pages'
import { switchOrg } from './session'
import { signIn, signInPage, signOut } from './sign-in'
import { redirect, render, type Visit, visitOf } from './visit'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

type Handler = (v: Visit, id: string) => Promise<Response>

/** GET pages by path pattern; `:id` is a UUID. */
const PAGES: [RegExp, Handler][] = [
  [/^\/console\/?$/, async () => redirect('/console/inboxes')],
  [/^\/console\/inboxes$/, inboxesPage],
  [/^\/console\/inboxes\/([^/]+)$/, inboxPage],
  [/^\/console\/threads$/, threadsPage],
  [/^\/console\/threads\/([^/]+)$/, threadPage],
  [/^\/console\/emails\/([^/]+)$/, emailRedirect],
  [/^\/console\/emails\/([^/]+)\/html$/, messageHtml],
  [/^\/console\/search$/, searchPage],
  [/^\/console\/webhooks$/, webhooksPage],
  [/^\/console\/deliveries\/([^/]+)$/, (v, id) => deliveryPage(v, id)],
  [/^\/console\/functions$/, functionsPage],
  [/^\/console\/functions\/([^/]+)$/, functionPage],
  [/^\/console\/drafts$/, v => draftsPage(v)],
  [/^\/console\/payments$/, paymentsPage],
  [/^\/console\/domains$/, domainsPage],
  [/^\/console\/domains\/([^/]+)$/, domainPage],
  [/^\/console\/keys$/, v => keysPage(v)],
]

/** Form posts by path pattern. */
const ACTIONS: [RegExp, Handler][] = [
  [/^\/console\/deliveries\/([^/]+)\/replay$/, replay],
  [/^\/console\/drafts\/([^/]+)\/approve$/, (v, id) => decideDraft(v, id, 'approve')],
  [/^\/console\/drafts\/([^/]+)\/reject$/, (v, id) => decideDraft(v, id, 'reject')],
  [/^\/console\/keys$/, createKey],
  [/^\/console\/keys\/([^/]+)\/revoke$/, revokeKey],
  [/^\/console\/org$/, chooseOrg],
  [/^\/console\/sign-out$/, v => signOut(v.ctx, v.session.id)],
]

async function emailRedirect(v: Visit, id: string) {
  const email = await call(v.ctx, v.auth, 'get_email', { id })
  return redirect(`/console/threads/${email.thread_id}#email-${email.id}`)
}

async function chooseOrg(v: Visit) {
  const orgId = v.form.get('org_id') ?? ''
  const orgs = await membershipsOf(v.ctx.sql, v.session.user_id)
  if (!orgs.some(o => o.org_id === orgId)) throw errors.notFound('organization')
  await switchOrg(v.ctx.sql, v.session.id, orgId)
  return redirect('/console/inboxes')
}

function errorPage(v: Visit | null, error: ApiError): Response {
  const body = html`<p class="error-box" role="alert"><strong>${error.code}</strong>: ${error.message}</p>
<p><a href="/console">Back to the console</a></p>`
  const title = error.status === 404 ? 'Not found' : 'Something went wrong'
  const page = v ? render(v, title, body, { status: error.status }) : new Response(layout(title, body), { status: error.status, headers: PAGE_HEADERS })
  for (const [name, value] of Object.entries(error.headers)) page.headers.set(name, value)
  return page
}

export function consoleRoutes(ctx: AppContext) {
  async function serve(request: Request, body: unknown, routes: [RegExp, Handler][]): Promise<Response> {
    const path = new URL(request.url).pathname
    let v: Visit | null = null
    try {
      const match = routes.map(([pattern, handler]) => [pattern.exec(path), handler] as const).find(([m]) => m)
      v = await visitOf(ctx, request, body)
      if (!v) return redirect('/console/sign-in')
      if (!match) throw errors.notFound('page')
      const [m, handler] = match
      const id = m![1] ?? ''
      if (m![1] !== undefined && !UUID.test(id)) throw errors.notFound('page')
      return await handler(v, id.toLowerCase())
    } catch (error) {
      const apiError = toApiError('UNKNOWN', error, request, path)
      if (apiError.status >= 500) log.error('console page failed', { path, error })
      return errorPage(v, apiError)
    }
  }

  return (
    new Elysia({ prefix: '/console', detail: { hide: true } })
      // the handlers answer with Responses of their own; the request log line should show their status
      .onAfterHandle(({ request, response }) => {
        if (response instanceof Response) requestFacts(request).status = response.status
      })
      .get('/assets/:name', ({ params }) => asset(params.name) ?? new Response('not found', { status: 404 }))
      .get('/sign-in', () => signInPage(ctx))
      .post('/sign-in', ({ request, body, server }) => signIn(ctx, request, body, server as Server), { parse: 'text' })
      .get('/', ({ request }) => serve(request, undefined, PAGES))
      .get('/*', ({ request }) => serve(request, undefined, PAGES))
      .post('/*', ({ request, body }) => serve(request, body, ACTIONS), { parse: 'text' })
  )
}
