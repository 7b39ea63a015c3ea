/**
 * Installable setups: ready-made agent setups (email templates, a function with the route that
 * feeds it, a webhook endpoint with its route, and the memories that configure them), created in
 * one transaction, all or nothing, with Idempotency-Key honoured. Install variables fill
 * `{{name}}` in memory values, endpoint URLs and route patterns (as text, not as templates of
 * mail).
 *
 * Each resource is made by its feature's own creation (deployFunction, createEndpoint,
 * createRoute, insertTemplate, applyMemoryOps) in the install's transaction, so every rule of a
 * standalone creation holds (plan limits, entitlements, URL safety, name and pattern conflicts).
 */
import type { AppContext } from '../context'
import type { Tx } from '../db/client'
import { errors } from '../errors'
import { idempotent } from '../http/idempotency'
import { mailEvents } from '../events'
import { lockMemoryUsage } from '../memories/queries'
import { applyMemoryOps } from '../memories/service'
import { deployFunction } from '../functions/service'
import { createEndpoint } from '../webhooks/endpoints.service'
import { createRoute } from '../webhooks/recipient-routes.service'
import { lockOrgForWebhooks } from '../webhooks/endpoint-queries'
import { dataProblems, type Variable } from './render'
import { insertTemplate, type TemplateInput } from './service'

interface Entry {
  slug: string
  name: string
  description: string
  variables: Variable[]
  templates: TemplateInput[]
  /** a function deployed with this code (its name must be free in the organization) */
  function?: { name: string; code: string }
  /** an HTTP endpoint that is a route target; `url` may use the install variables */
  endpoint?: { url: string }
  /** a recipient route (pattern may use the install variables) to the function or the endpoint */
  route?: { pattern: string; to: 'function' | 'endpoint' }
  /** key and value; string values may use the install variables as {{name}}; `function`: in the function's own scope */
  memories: { key: string; value: unknown; scope: 'org' | 'function' }[]
}

/**
 * The auto-responder's code. For each received message it reads its settings from its own
 * memory scope (SERVICE_API_BASE_URL, SERVICE_API_KEY), and answers in the thread with the
 * stored template; it never answers its own address.
 */
const AUTO_RESPONDER_CODE = `export default {
  async fetch(request, env) {
    const event = await request.json()
    if (event.event !== 'email.received' || !event.email) return new Response('ignored: ' + event.event)
    const api = (path, init = {}) =>
      fetch(env.SERVICE_API_BASE_URL + path, { ...init, headers: { authorization: 'Bearer ' + env.SERVICE_API_KEY, 'content-type': 'application/json' } })
    const settings = await api('/memories/' + encodeURIComponent('auto-responder/config'))
    if (!settings.ok) return new Response('no settings (' + settings.status + ')', { status: 500 })
    const config = (await settings.json()).data.value
    const sender = event.email.parsed.from
    if (!config.enabled || !sender || sender.address.toLowerCase() === String(config.from).toLowerCase()) return new Response('not answered')
    const data = { subject: event.email.headers.subject || '', signature: config.signature }
    if (sender.name) data.sender_name = sender.name
    const sent = await api('/send-mail', {
      method: 'POST',
      body: JSON.stringify({ from: config.from, in_reply_to_email_id: event.email.id, template: { alias: config.template_alias, data } }),
    })
    if (!sent.ok) return new Response('send-mail answered ' + sent.status + ': ' + (await sent.text()), { status: 502 })
    return new Response('answered')
  },
}
`

export const CATALOG: Entry[] = [
  {
    slug: 'auto-responder',
    name: 'Auto-responder',
    description:
      "A function (auto-responder) that answers every message to the address in its thread, a recipient route that feeds it that address's mail, an acknowledgement template (alias auto-reply) with the sender's name and subject, and the function's settings in its own memory (auto-responder/config: enabled, template_alias, from, signature).",
    variables: [
      { name: 'from_address', description: 'the address whose mail is answered, and that replies come from' },
      { name: 'signature', required: false, default: 'The team', description: 'closing line' },
    ],
    templates: [
      {
        name: 'Auto-reply',
        alias: 'auto-reply',
        subject: 'Re: {{subject}}',
        body_text: 'Hello {{sender_name}},\n\nThanks for your message. We received it and will answer soon.\n\n{{signature}}',
        body_html: '<p>Hello {{sender_name}},</p><p>Thanks for your message. We received it and will answer soon.</p><p>{{signature}}</p>',
        variables: [
          { name: 'subject' },
          { name: 'sender_name', required: false, default: 'there' },
          { name: 'signature', required: false, default: 'The team' },
        ],
      },
    ],
    function: { name: 'auto-responder', code: AUTO_RESPONDER_CODE },
    route: { pattern: '{{from_address}}', to: 'function' },
    memories: [
      {
        key: 'auto-responder/config',
        scope: 'function',
        value: { enabled: true, template_alias: 'auto-reply', from: '{{from_address}}', signature: '{{signature}}' },
      },
    ],
  },
  {
    slug: 'forward-to-webhook',
    name: 'Forward to a webhook',
    description:
      'An HTTPS endpoint (a route target) and a recipient route to it: every message to the address (or pattern) is delivered to the URL as a signed email.received event, and to nothing else.',
    variables: [
      { name: 'address', description: 'the address or pattern whose mail is forwarded (for example support@your-domain, or *@your-domain)' },
      { name: 'url', description: 'the HTTPS URL that receives the events' },
    ],
    templates: [],
    endpoint: { url: '{{url}}' },
    route: { pattern: '{{address}}', to: 'endpoint' },
    memories: [],
  },
  {
    slug: 'payment-request',
    name: 'Payment request flow',
    description:
      "Two templates, a payment request (alias payment-request) and a receipt (alias payment-receipt), and the flow's settings in memory (payments/config): ask for a USDC payment by email and confirm it once settled.",
    variables: [
      { name: 'from_address', description: 'the address requests are sent from' },
      { name: 'network', required: false, default: 'base-sepolia', description: 'base or base-sepolia' },
    ],
    templates: [
      {
        name: 'Payment request',
        alias: 'payment-request',
        subject: 'Payment request: {{description}}',
        body_text: 'Hello,\n\nPlease pay {{amount}} USDC for {{description}}.\n{{#pay_url}}Pay here: {{pay_url}}\n{{/pay_url}}\nThank you.',
        body_html:
          '<p>Hello,</p><p>Please pay <b>{{amount}} USDC</b> for {{description}}.</p>{{#pay_url}}<p><a href="{{pay_url}}">Pay here</a></p>{{/pay_url}}<p>Thank you.</p>',
        variables: [{ name: 'amount' }, { name: 'description' }, { name: 'pay_url', required: false }],
      },
      {
        name: 'Payment receipt',
        alias: 'payment-receipt',
        subject: 'Receipt: {{description}}',
        body_text: 'We received {{amount}} USDC for {{description}}.\nTransaction: {{settle_tx}}',
        body_html: '<p>We received <b>{{amount}} USDC</b> for {{description}}.</p><p>Transaction: <code>{{settle_tx}}</code></p>',
        variables: [{ name: 'amount' }, { name: 'description' }, { name: 'settle_tx' }],
      },
    ],
    memories: [
      {
        key: 'payments/config',
        scope: 'org',
        value: { request_template: 'payment-request', receipt_template: 'payment-receipt', from: '{{from_address}}', network: '{{network}}' },
      },
    ],
  },
]

export const presentEntry = (e: Entry) => ({
  slug: e.slug,
  name: e.name,
  description: e.description,
  variables: e.variables,
  creates: [
    ...e.templates.map(t => ({ type: 'template', name: t.alias ?? t.name })),
    ...(e.function ? [{ type: 'function', name: e.function.name }] : []),
    ...(e.endpoint ? [{ type: 'endpoint', name: e.endpoint.url }] : []),
    // a route to a function mints the function's route-target endpoint
    ...(e.route?.to === 'function' ? [{ type: 'endpoint', name: `function://${e.function!.name}` }] : []),
    ...(e.route ? [{ type: 'route', name: e.route.pattern }] : []),
    ...e.memories.map(m => ({ type: 'memory', name: m.scope === 'function' ? `${e.function!.name}: ${m.key}` : m.key })),
  ],
})

/** Fills {{name}} in the strings of a JSON value; nothing else is interpreted. */
function fill<T>(value: T, vars: Record<string, unknown>): T {
  if (typeof value === 'string') return value.replace(/\{\{(\w+)\}\}/g, (_m, name: string) => String(vars[name] ?? '')) as T
  if (Array.isArray(value)) return value.map(v => fill(v, vars)) as T
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars)])) as T
  return value
}

export interface InstallResult {
  slug: string
  created: { type: string; id: string; name: string }[]
}

/** Creates the entry's resources in the caller's transaction, in the order they depend on each other. */
async function createAll(ctx: AppContext, tx: Tx, orgId: string, entry: Entry, vars: Record<string, unknown>): Promise<InstallResult['created']> {
  // Every lock the steps take, first and in the order other writers take them (the webhooks
  // lock, then the memory lock): a deployment records a change, which takes the feed's
  // counter, and no later step may then wait for a lock that a writer holding it waits for.
  if (entry.endpoint || entry.route) await lockOrgForWebhooks(tx, orgId)
  if (entry.memories.length) await lockMemoryUsage(tx, orgId)
  const created: InstallResult['created'] = []
  for (const t of entry.templates) {
    const row = await insertTemplate(tx, orgId, t)
    created.push({ type: 'template', id: row.id, name: row.alias ?? row.name })
  }
  let functionId: string | null = null
  if (entry.function) {
    const fn = await deployFunction(ctx, orgId, entry.function, tx)
    if (!fn.current_deployment_id) throw new Error(`catalog ${entry.slug}: its function did not deploy (${fn.deployment.deploy_error?.message})`)
    functionId = fn.id
    created.push({ type: 'function', id: fn.id, name: fn.name })
  }
  let endpointId: string | null = null
  if (entry.endpoint) {
    const { row } = await createEndpoint(tx, ctx, orgId, { kind: 'http', url: fill(entry.endpoint.url, vars), is_route_target: true })
    endpointId = row.id
    created.push({ type: 'endpoint', id: row.id, name: row.url! })
  }
  if (entry.route) {
    const target = entry.route.to === 'function' ? { function_id: functionId! } : { endpoint_id: endpointId! }
    const route = await createRoute(tx, ctx.config.MANAGED_DOMAIN, orgId, { pattern: fill(entry.route.pattern, vars), ...target })
    if (entry.route.to === 'function') created.push({ type: 'endpoint', id: route.endpoint_id, name: `function://${functionId}` })
    created.push({ type: 'route', id: route.id, name: route.pattern })
  }
  for (const scope of ['org', 'function'] as const) {
    const ops = entry.memories.filter(m => m.scope === scope).map(m => ({ op: 'set' as const, key: m.key, value: fill(m.value, vars) }))
    if (!ops.length) continue
    const results = await applyMemoryOps(ctx, { orgId, functionId: scope === 'function' ? functionId : null }, ops, true, tx)
    for (const r of results) created.push({ type: 'memory', id: r.key, name: scope === 'function' ? `functions/${functionId}/memories/${r.key}` : r.key })
  }
  return created
}

/** Creates an entry's resources in one transaction; returns the outcome for the route (201, or a replay). */
export async function install(ctx: AppContext, orgId: string, body: { slug: string; variables?: Record<string, unknown> }, key: string | undefined) {
  const entry = CATALOG.find(e => e.slug === body.slug)
  if (!entry) throw errors.validation('slug', `is not in the catalog (${CATALOG.map(e => e.slug).join(', ')})`)
  const given = body.variables ?? {}
  const { missing, undeclared } = dataProblems({ subject: '', body_text: '', variables: entry.variables }, given)
  if (undeclared.length) throw errors.validation('variables', `${undeclared.map(n => `"${n}"`).join(', ')} not asked for by ${entry.slug}`)
  if (missing.length) throw errors.validation('variables', `missing ${missing.map(n => `"${n}"`).join(', ')}`)
  const vars = Object.fromEntries(entry.variables.map(v => [v.name, v.name in given ? given[v.name] : v.default]))
  const outcome = await idempotent<InstallResult>(ctx.sql, ctx.keys, { scope: `org:${orgId}:templates.install`, key, payload: body }, async tx => {
    return { status: 201, data: { slug: entry.slug, created: await createAll(ctx, tx, orgId, entry, vars) } }
  })
  if (!outcome.replayed) mailEvents(ctx).emitChange(orgId)
  return outcome
}
