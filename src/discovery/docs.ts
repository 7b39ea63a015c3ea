/**
 * `/docs`: the human API reference, rendered from the same OpenAPI document as
 * `/v1/openapi`, with every asset served by this service (a self-hosted service must document
 * itself offline, so nothing comes from a CDN).
 *
 * The operations are drawn by Swagger UI (the `swagger-ui-dist` package: its prebuilt bundle
 * and stylesheet, no runtime dependencies) from `/v1/openapi`. Above it, a short guide with
 * the anchors that error `docs_url`s point at (#errors, #entitlements, #send-gates,
 * #suppressions, #deprecations), built from the same document and the same tables the code uses.
 */
import { Elysia } from 'elysia'
import { dirname, join } from 'node:path'
import type { AppContext } from '../context'
import { ENTITLEMENTS, PLANS, planDefinition } from '../account/plans'
import { ERROR_STATUS, errors } from '../errors'

type Json = Record<string, unknown>

const SWAGGER_DIR = dirname(Bun.resolveSync('swagger-ui-dist/package.json', import.meta.dir))

/** The files /docs/assets/ serves; nothing else of the package directory is reachable. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui.css': { file: join(SWAGGER_DIR, 'swagger-ui.css'), type: 'text/css;charset=utf-8' },
  'swagger-ui-bundle.js': { file: join(SWAGGER_DIR, 'swagger-ui-bundle.js'), type: 'text/javascript;charset=utf-8' },
  'favicon-32x32.png': { file: join(SWAGGER_DIR, 'favicon-32x32.png'), type: 'image/png' },
}

// A file rather than an inline script, so the page's Content-Security-Policy can forbid inline scripts.
// validatorUrl null: Swagger UI would otherwise send the document to an online validator.
const INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/v1/openapi', dom_id: '#operations', deepLinking: true, validatorUrl: null, defaultModelsExpandDepth: 0 })
})
`

const escapeHtml = (s: unknown) => String(s).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)

function table(head: string[], rows: unknown[][]): string {
  return `<table><thead><tr>${head.map(h => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map(r => `<tr>${r.map(c => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`
}

function deprecations(doc: Json): unknown[][] {
  const rows: unknown[][] = []
  for (const [path, ops] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(ops)) if (op.deprecated) rows.push([`${method.toUpperCase()} ${path}`, op.description ?? op.summary ?? ''])
  }
  return rows
}

/** The page: the guide, then the container Swagger UI fills. */
export function docsPage(doc: Json): string {
  const info = (doc.info ?? {}) as Json
  const deprecated = deprecations(doc)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(info.title)} API reference</title>
<link rel="icon" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<style>
  body { margin: 0; font-family: system-ui, sans-serif; color: #222; }
  .guide { max-width: 1400px; margin: 0 auto; padding: 24px 20px 0; line-height: 1.5; }
  .guide table { border-collapse: collapse; margin: 8px 0 16px; font-size: 14px; }
  .guide td, .guide th { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
  .guide code { background: #f4f4f4; padding: 0 3px; }
</style>
</head>
<body>
<main>
<section class="guide">
<h1>${escapeHtml(info.title)} <small>${escapeHtml(info.version)}</small></h1>
<p>${escapeHtml(info.description)}</p>
<p>The machine-readable document: <a href="/v1/openapi"><code>/v1/openapi</code></a> (OpenAPI 3.1).</p>
<h2 id="errors">Errors</h2>
<p>Every error is <code>{success: false, error: {code, message, details?, gates?}}</code>. Branch on <code>code</code>; validation messages read <code>field: reason</code>. Codes that ask you to wait carry <code>Retry-After</code>.</p>
${table(['code', 'HTTP status'], Object.entries(ERROR_STATUS))}
<h2 id="entitlements">Entitlements</h2>
<p>A route that needs an entitlement the organization lacks answers <code>403 feature_disabled</code> with <code>details.missing_entitlement</code>. Plans include these; an operator can grant others.</p>
${table(
  ['entitlement', 'included in plans'],
  ENTITLEMENTS.map(e => [e, PLANS.filter(p => planDefinition(p).entitlements.includes(e)).join(', ') || 'granted by an operator']),
)}
<h2 id="send-gates">Send gates</h2>
<p>On the reply-only agent plan, <code>send_to_known_addresses</code> allows a recipient only after that address wrote to the organization with authenticated mail (DMARC pass and a DKIM signature covering To). A refused send is <code>403 recipient_not_allowed</code> with one <code>error.gates[]</code> entry per recipient: <code>name, reason, message, subject, fix?, docs_url</code>. Branch on <code>reason</code>.</p>
<h2 id="suppressions">Suppressions</h2>
<p>Every plan: an address on the organization's suppression list (added by a hard bounce, a complaint, or by hand with <code>POST /v1/suppressions</code>) is refused by the <code>suppression_list</code> gate with <code>403 recipient_not_allowed</code>, one <code>error.gates[]</code> entry per address, reason <code>recipient_hard_bounced</code>, <code>recipient_complained</code> or <code>recipient_suppressed</code>, fix <code>delete_suppression</code>: <code>DELETE /v1/suppressions/{address}</code> sends to it again. Soft bounces never suppress.</p>
<h2 id="deprecations">Deprecations</h2>
${deprecated.length ? table(['operation', 'what to use instead'], deprecated) : '<p>None.</p>'}
</section>
<div id="operations"></div>
</main>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`
}

const PAGE_HEADERS = {
  'content-type': 'text/html;charset=utf-8',
  // Swagger UI sets inline styles; scripts, fonts, images and fetches stay on this origin
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-cache',
}

export function docsRoutes(_ctx: AppContext, openapi: () => Json) {
  let page: string | undefined
  return new Elysia()
    .get('/docs', () => new Response((page ??= docsPage(openapi())), { headers: PAGE_HEADERS }), { detail: { hide: true } })
    .get(
      '/docs/assets/:file',
      ({ params }) => {
        if (params.file === 'init.js')
          return new Response(INIT, { headers: { 'content-type': 'text/javascript;charset=utf-8', 'cache-control': 'public, max-age=3600' } })
        const asset = ASSETS[params.file]
        if (!asset) throw errors.notFound(`docs asset ${params.file}`)
        return new Response(Bun.file(asset.file), {
          headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
        })
      },
      { detail: { hide: true } },
    )
}
