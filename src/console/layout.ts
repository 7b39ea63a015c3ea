/**
 * The console's page frame: Pico CSS for readable, accessible defaults and htmx for page changes
 * without full reloads, both served from node_modules by the service (assets.ts), under a policy
 * that allows only our own scripts, styles and frames. Every interpolated value is escaped
 * (`html` of oauth/pages.ts); every page works without scripts too (plain links and forms).
 */
import { html } from '../oauth/pages'
import type { Role } from '../auth/principal'
import type { Membership } from '../account/membership-queries'

export { html }
export type Html = ReturnType<typeof html>

const POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  // Pico draws its icons (checkbox marks, select arrows) as data: SVG
  "img-src 'self' data:",
  "frame-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ')

export const PAGE_HEADERS = {
  'content-type': 'text/html;charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': POLICY,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
}

/** htmx: no inline styles (the policy refuses them), no eval, and error pages are shown like any other. */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  historyCacheSize: 0,
  responseHandling: [{ code: '.*', swap: true }],
})

/** Who is looking, for the header: their address, organizations and role in the current one. */
export interface Viewer {
  email: string
  orgId: string
  role: Role
  orgs: Membership[]
  csrf: string
}

const NAV = [
  ['/console/inboxes', 'Inboxes'],
  ['/console/threads', 'Threads'],
  ['/console/search', 'Search'],
  ['/console/drafts', 'Drafts'],
  ['/console/webhooks', 'Webhooks'],
  ['/console/functions', 'Functions'],
  ['/console/payments', 'Payments'],
  ['/console/domains', 'Domains'],
  ['/console/keys', 'API keys'],
] as const

function header(v: Viewer, current: string) {
  const org = v.orgs.find(o => o.org_id === v.orgId)
  return html`<header class="container">
<nav aria-label="Console">
<ul><li><a href="/console" class="brand"><strong>Agent mail</strong></a></li></ul>
<ul>
${NAV.map(([href, label]) => html`<li><a href="${href}"${current.startsWith(href) ? html` aria-current="page"` : ''}>${label}</a></li>`)}
</ul>
</nav>
<div class="who">
<span>${v.email} · <strong>${org?.name ?? ''}</strong> <span class="muted">(${v.role})</span></span>
${
  v.orgs.length > 1
    ? html`<form method="post" action="/console/org" class="inline">
<input type="hidden" name="csrf_token" value="${v.csrf}">
<label for="org_id" class="visually-hidden">Organization</label>
<select id="org_id" name="org_id">${v.orgs.map(o => html`<option value="${o.org_id}"${o.org_id === v.orgId ? html` selected` : ''}>${o.name} (${o.role})</option>`)}</select>
<button type="submit" class="secondary">Switch</button>
</form>`
    : ''
}
<form method="post" action="/console/sign-out" class="inline">
<input type="hidden" name="csrf_token" value="${v.csrf}">
<button type="submit" class="secondary outline">Sign out</button>
</form>
</div>
</header>`
}

/** A whole page; `viewer` is absent on the sign-in page. */
export function layout(title: string, body: Html, viewer?: Viewer, current = ''): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<title>${title} · Agent mail console</title>
<link rel="stylesheet" href="/console/assets/pico.min.css">
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/htmx.min.js" defer></script>
<script src="/console/assets/console.js" defer></script>
</head>
<body hx-boost="true">
<a class="skip" href="#main">Skip to content</a>
${viewer ? header(viewer, current) : ''}
<main class="container" id="main">
<h1 tabindex="-1">${title}</h1>
${body}
</main>
</body>
</html>
`.value
}

/** A table with a caption (read out first by screen readers) and a row per item, or a sentence when there is none. */
export function table<T>(caption: string, heads: string[], rows: T[], row: (item: T) => Html, empty: string) {
  if (!rows.length) return html`<p>${empty}</p>`
  return html`<figure><table>
<caption>${caption}</caption>
<thead><tr>${heads.map(h => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows.map(row)}</tbody>
</table></figure>`
}

/** "12 in all" and the link to the next page, keeping the page's other parameters. */
export function pager(path: string, total: number, cursor: string | null, params: Record<string, string | undefined> = {}) {
  const next = new URLSearchParams(Object.entries({ ...params, cursor: cursor ?? undefined }).filter((e): e is [string, string] => !!e[1]))
  return html`<p class="muted">${total} in all.${cursor ? html` <a href="${path}?${next.toString()}">Next page</a>` : ''}</p>`
}

/** A form that posts an action with the session's CSRF token. */
export function actionForm(action: string, csrf: string, label: string, opts: { secondary?: boolean; fields?: Html; name?: string } = {}) {
  return html`<form method="post" action="${action}" class="inline">
<input type="hidden" name="csrf_token" value="${csrf}">
${opts.fields ?? ''}
<button type="submit"${opts.secondary ? html` class="secondary"` : ''}${opts.name ? html` aria-label="${opts.name}"` : ''}>${label}</button>
</form>`
}

export const when = (iso: string | null | undefined) =>
  iso ? html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 19)}</time>` : html`<span class="muted">never</span>`
