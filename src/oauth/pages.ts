/**
 * The HTML of the authorization page, rendered on the server with every interpolated value
 * escaped. No scripts: the policy allows only the one inline style (by hash), forms posting to
 * us (and the redirect that follows, to the client's registered origin), and no framing.
 */
import { createHash } from 'node:crypto'
import type { Membership } from '../account/membership-queries'

class Html {
  constructor(readonly value: string) {}
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)
}

function render(value: unknown): string {
  if (value instanceof Html) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

/** A template literal whose interpolations are escaped unless they are Html already. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  return new Html(strings.reduce((out, s, i) => out + render(values[i - 1]) + s))
}

const CSS = `
body{font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1d2433;margin:0;padding:2rem 1rem}
main{max-width:26rem;margin:0 auto;background:#fff;border-radius:10px;padding:2rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.3rem;margin:0 0 1rem}
p{margin:.5rem 0 1rem}
label{display:block;font-weight:600;margin:1rem 0 .3rem}
input[type=email],input[type=password],input[type=text]{box-sizing:border-box;width:100%;padding:.55rem;border:1px solid #b8bfcc;border-radius:6px;font:inherit}
fieldset{border:1px solid #d6dae2;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}
fieldset label{font-weight:400;margin:.4rem 0}
.actions{display:flex;gap:.75rem;margin-top:1.5rem}
button{font:inherit;padding:.55rem 1.1rem;border-radius:6px;border:1px solid #2450c8;background:#2450c8;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#2450c8}
.error{background:#fdecec;border:1px solid #e6a1a1;color:#8a1c1c;border-radius:6px;padding:.6rem .8rem}
.muted{color:#5b6477;font-size:.9rem}
code{font-size:.85rem;word-break:break-all}
`
const STYLE_SOURCE = `'sha256-${createHash('sha256').update(CSS).digest('base64')}'`
/** Origins that may appear in the policy: scheme, host and port only (registration guarantees the host's characters). */
const ORIGIN = /^https?:\/\/[a-z0-9_.\-[\]:]+$/

/** Security headers of every page; `redirectOrigin` is where the form's redirect may go. */
export function pageHeaders(redirectOrigin?: string): Record<string, string> {
  const formAction = redirectOrigin && ORIGIN.test(redirectOrigin) ? `'self' ${redirectOrigin}` : `'self'`
  return {
    'content-type': 'text/html;charset=utf-8',
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; style-src ${STYLE_SOURCE}; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  }
}

/** A whole page around `body`: the one stylesheet the policy allows, nothing else. */
export function layout(title: string, body: Html): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title}</title>
<style>${new Html(CSS)}</style>
</head>
<body><main>
${body}
</main></body>
</html>
`.value
}

export interface PageView {
  clientName: string | null
  redirectUri: string
  requestId: string
  csrf: string
  error?: string
}

/** Client names are self-asserted at registration; the page also shows where the code goes. */
const appName = (v: PageView) => v.clientName ?? 'an unnamed application'

function hidden(v: PageView): Html {
  return html`<input type="hidden" name="request_id" value="${v.requestId}">
<input type="hidden" name="csrf_token" value="${v.csrf}">`
}

function intro(v: PageView): Html {
  return html`<p>${v.clientName === null ? 'An unnamed application' : html`<strong>${v.clientName}</strong>`} asks for full API access (<code>service:api</code>) to one of your organizations.
It will be sent back to <code>${new URL(v.redirectUri).origin}</code>. Continue only if you started this from that application.</p>
${v.error ? html`<p class="error" role="alert">${v.error}</p>` : ''}`
}

export function signInPage(v: PageView & { email?: string }): string {
  return layout(
    'Sign in to authorize',
    html`<h1>Sign in to authorize ${appName(v)}</h1>
${intro(v)}
<form method="post" action="/oauth/authorize">
${hidden(v)}
<label for="email">Email address</label>
<input id="email" type="email" name="email" autocomplete="username" required value="${v.email ?? ''}">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<div class="actions">
<button type="submit" name="action" value="allow">Sign in</button>
<button type="submit" name="action" value="deny" class="secondary" formnovalidate>Cancel</button>
</div>
</form>`,
  )
}

/**
 * The organization picker and the allow/deny buttons of a page that grants a credential: one
 * radio per organization (a single one preselected), what the grant means, and the buttons.
 */
export function orgChoice(orgs: Membership[], who: string, allow: { value: string; label: string }) {
  const only = orgs.length === 1
  return html`<fieldset>
<legend>Organization</legend>
${orgs.map(
  o => html`<label><input type="radio" name="org_id" value="${o.org_id}" required${only ? new Html(' checked') : ''}> ${o.name} <span class="muted">(${o.role})</span></label>
`,
)}
</fieldset>
<p class="muted">${who} acts with your role in the organization you choose, as long as you keep it.</p>
<div class="actions">
<button type="submit" name="action" value="${allow.value}">${allow.label}</button>
<button type="submit" name="action" value="deny" class="secondary" formnovalidate>Deny</button>
</div>`
}

export function chooseOrgPage(v: PageView & { orgs: Membership[] }): string {
  return layout(
    'Choose an organization',
    html`<h1>Authorize ${appName(v)}</h1>
${intro(v)}
<form method="post" action="/oauth/authorize">
${hidden(v)}
${orgChoice(v.orgs, 'The application', { value: 'allow', label: 'Allow' })}
</form>`,
  )
}

export function errorPage(title: string, message: string): string {
  return layout(
    title,
    html`<h1>${title}</h1>
<p class="error" role="alert">${message}</p>
<p class="muted">Nothing was authorized. Go back to the application and start again.</p>`,
  )
}

/** A page answer with the page headers; a redirect URI's origin is allowed as a form target. */
export function htmlResponse(body: string, status: number, headers: Record<string, string> = {}, redirectUri?: string): Response {
  return new Response(body, { status, headers: { ...pageHeaders(redirectUri && new URL(redirectUri).origin), ...headers } })
}

export const tooManyAttempts = (retryAfter: number) =>
  htmlResponse(errorPage('Too many attempts', `Too many requests from this address. Wait ${retryAfter} seconds, then go back and try again.`), 429, {
    'retry-after': String(retryAfter),
  })

const BROWSER_ID = /^[A-Za-z0-9_-]{43}$/

/**
 * The cookie that binds a sign-in page to the browser that loaded it, so a form posted from
 * another browser (a stolen page) is refused. One per flow, scoped to the flow's path.
 */
export function browserCookie(name: string, path: string) {
  return {
    read(request: Request): string | null {
      for (const part of (request.headers.get('cookie') ?? '').split(';')) {
        const [key, value] = part.trim().split('=')
        if (key === name && value && BROWSER_ID.test(value)) return value
      }
      return null
    },
    header(value: string, secure: boolean): string {
      return `${name}=${value}; Path=${path}; HttpOnly; SameSite=Lax; Max-Age=86400${secure ? '; Secure' : ''}`
    },
  }
}
