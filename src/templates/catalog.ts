/**
 * Installable setups: ready-made email templates and the memories that configure them,
 * created in one transaction (all or nothing), with Idempotency-Key honoured. Install
 * variables fill `{{name}}` in the memory values (rendered as text, not as templates of mail).
 */
import type { AppContext } from '../context'
import { errors } from '../http/errors'
import { idempotent } from '../http/idempotency'
import { mailEvents } from '../mail/events'
import { applyMemoryOps } from '../memories/service'
import { dataProblems, type Variable } from './render'
import { insertTemplate, type TemplateInput } from './service'

interface Entry {
  slug: string
  name: string
  description: string
  variables: Variable[]
  templates: TemplateInput[]
  /** key and value; string values may use the install variables as {{name}} */
  memories: { key: string; value: unknown }[]
}

export const CATALOG: Entry[] = [
  {
    slug: 'auto-responder',
    name: 'Auto-responder',
    description:
      'An acknowledgement template (alias auto-reply) and its settings in memory (auto-responder/config): an agent or function answering each inbound message sends the template with the sender\'s name and subject.',
    variables: [
      { name: 'from_address', description: 'the address replies are sent from' },
      { name: 'signature', required: false, default: 'The team', description: 'closing line' },
    ],
    templates: [
      {
        name: 'Auto-reply',
        alias: 'auto-reply',
        subject: 'Re: {{subject}}',
        body_text: 'Hello {{sender_name}},\n\nThanks for your message. We received it and will answer soon.\n\n{{signature}}',
        body_html: '<p>Hello {{sender_name}},</p><p>Thanks for your message. We received it and will answer soon.</p><p>{{signature}}</p>',
        variables: [{ name: 'subject' }, { name: 'sender_name', required: false, default: 'there' }, { name: 'signature', required: false, default: 'The team' }],
      },
    ],
    memories: [{ key: 'auto-responder/config', value: { enabled: true, template_alias: 'auto-reply', from: '{{from_address}}', signature: '{{signature}}' } }],
  },
  {
    slug: 'payment-request',
    name: 'Payment request flow',
    description:
      'Two templates, a payment request (alias payment-request) and a receipt (alias payment-receipt), and the flow\'s settings in memory (payments/config): ask for a USDC payment by email and confirm it once settled.',
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
        body_html: '<p>Hello,</p><p>Please pay <b>{{amount}} USDC</b> for {{description}}.</p>{{#pay_url}}<p><a href="{{pay_url}}">Pay here</a></p>{{/pay_url}}<p>Thank you.</p>',
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
    memories: [{ key: 'payments/config', value: { request_template: 'payment-request', receipt_template: 'payment-receipt', from: '{{from_address}}', network: '{{network}}' } }],
  },
]

export const presentEntry = (e: Entry) => ({
  slug: e.slug,
  name: e.name,
  description: e.description,
  variables: e.variables,
  creates: [...e.templates.map(t => ({ type: 'template', name: t.alias ?? t.name })), ...e.memories.map(m => ({ type: 'memory', name: m.key }))],
})

/** Fills {{name}} in the strings of a JSON value; nothing else is interpreted. */
function fill(value: unknown, vars: Record<string, unknown>): unknown {
  if (typeof value === 'string') return value.replace(/\{\{(\w+)\}\}/g, (_m, name: string) => String(vars[name] ?? ''))
  if (Array.isArray(value)) return value.map(v => fill(v, vars))
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars)]))
  return value
}

export interface InstallResult {
  slug: string
  created: { type: string; id: string; name: string }[]
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
    const created: InstallResult['created'] = []
    for (const t of entry.templates) {
      const row = await insertTemplate(tx, orgId, t)
      created.push({ type: 'template', id: row.id, name: row.alias ?? row.name })
    }
    // memories last: their writes end with the changes feed's counter (see changes/record.ts)
    const ops = entry.memories.map(m => ({ op: 'set' as const, key: m.key, value: fill(m.value, vars) }))
    const results = await applyMemoryOps(ctx, { orgId, functionId: null }, ops, true, tx)
    for (const r of results) created.push({ type: 'memory', id: r.key, name: r.key })
    return { status: 201, data: { slug: entry.slug, created } }
  })
  if (!outcome.replayed) mailEvents(ctx).emitChange(orgId)
  return outcome
}
