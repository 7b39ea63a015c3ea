/**
 * What the agents set up and what came of it: webhook endpoints and deliveries (with replay),
 * functions with their invocations and logs, drafts waiting for approval, the x402 ledger and
 * domains with their DNS records.
 */
import { randomUUIDv7 } from 'bun'
import { call, page, type Row } from './call'
import { actionForm, html, pager, table, when } from './layout'
import { listPage } from './list-page'
import { render, type Visit } from './visit'

const q = (v: Visit, name: string) => v.url.searchParams.get(name) ?? undefined

export async function webhooksPage(v: Visit) {
  const [endpoints, deliveries] = await Promise.all([
    page(v.ctx, v.auth, 'list_webhook_endpoints', { limit: 100 }),
    page(v.ctx, v.auth, 'list_webhook_deliveries', { cursor: q(v, 'cursor') }),
  ])
  return render(
    v,
    'Webhooks',
    html`<h2>Endpoints</h2>
${table(
  'Webhook endpoints',
  ['URL', 'Kind', 'Enabled', 'Created'],
  endpoints.items,
  e => html`<tr><td><code>${e.url}</code></td><td>${e.kind}</td><td>${e.enabled ? 'yes' : 'no'}</td><td>${when(e.created_at)}</td></tr>`,
  'No endpoints yet.',
)}
<h2>Deliveries</h2>
${deliveryTable(deliveries.items)}
${pager('/console/webhooks', deliveries.total, deliveries.cursor)}`,
  )
}

const deliveryTable = (items: Row[]) =>
  table(
    'Webhook deliveries, newest first',
    ['Created', 'Event', 'Endpoint', 'Status', 'Attempts', 'Subject'],
    items,
    d => html`<tr><td><a href="/console/deliveries/${d.id}">${when(d.created_at)}</a></td><td>${d.event_type}</td><td><code>${d.endpoint_url}</code></td>
<td>${d.status}</td><td>${d.attempt_count}</td><td>${d.email?.subject ?? ''}</td></tr>`,
    'No deliveries yet.',
  )

export async function deliveryPage(v: Visit, id: string, replayed?: string) {
  const d = await call(v.ctx, v.auth, 'get_webhook_delivery', { id })
  return render(
    v,
    `Delivery of ${d.event_type}`,
    html`${replayed ? html`<p role="status">${replayed}</p>` : ''}
<dl>
<dt>Endpoint</dt><dd><code>${d.endpoint_url}</code></dd>
<dt>Status</dt><dd id="delivery-status">${d.status}</dd>
<dt>Attempts</dt><dd id="delivery-attempts">${d.attempt_count}</dd>
<dt>Last response</dt><dd>${d.response_status ?? 'none'}${d.duration_ms !== null ? ` in ${d.duration_ms} ms` : ''}</dd>
<dt>Last error</dt><dd>${d.last_error ?? 'none'}</dd>
<dt>Message</dt><dd>${d.email_id ? html`<a href="/console/emails/${d.email_id}">${d.email?.subject ?? d.email_id}</a>` : 'none'}</dd>
<dt>Event id</dt><dd><code>${d.event_id}</code></dd>
<dt>Created</dt><dd>${when(d.created_at)}; last change ${when(d.updated_at)}</dd>
</dl>
${actionForm(`/console/deliveries/${d.id}/replay`, v.viewer.csrf, 'Replay this delivery')}`,
    { url: `/console/deliveries/${d.id}` },
  )
}

export async function replay(v: Visit, id: string) {
  const result = await call(v.ctx, v.auth, 'replay_webhook_delivery', { id })
  return deliveryPage(v, id, result.delivered ? 'Replayed: the endpoint accepted it.' : 'Replayed: the endpoint did not accept it.')
}

export const functionsPage = (v: Visit) =>
  listPage(v, 'Functions', 'list_functions', '/console/functions', {
    caption: 'Functions',
    heads: ['Name', 'Deploy status', 'Tags', 'Updated'],
    row: f =>
      html`<tr><td><a href="/console/functions/${f.id}">${f.name}</a></td><td>${f.deploy_status}</td><td>${f.tags.join(', ')}</td><td>${when(f.updated_at)}</td></tr>`,
    empty: 'No functions yet.',
  })

export async function functionPage(v: Visit, id: string) {
  const [fn, invocations, logs] = await Promise.all([
    call(v.ctx, v.auth, 'get_function', { id }),
    page(v.ctx, v.auth, 'list_function_invocations', { id }),
    page(v.ctx, v.auth, 'list_function_logs', { id, limit: 50 }),
  ])
  return render(
    v,
    `Function ${fn.name}`,
    html`<h2>Invocations</h2>
${table(
  'Invocations, newest first',
  ['Started', 'Outcome', 'Request', 'Status', 'CPU ms', 'Exception'],
  invocations.items,
  i => html`<tr><td>${when(i.started_at ?? i.created_at)}</td><td>${i.outcome}</td><td>${i.request_method} <code>${i.request_url}</code></td>
<td>${i.response_status ?? ''}</td><td>${i.cpu_ms}</td><td>${i.exception_name ? `${i.exception_name}: ${i.exception_message ?? ''}` : ''}</td></tr>`,
  'No invocations yet.',
)}
<h2>Logs</h2>
${table(
  'Log lines, newest first',
  ['Time', 'Level', 'Message'],
  logs.items,
  l => html`<tr><td>${when(l.logged_at)}</td><td>${l.level}</td><td><code>${l.message}</code></td></tr>`,
  'No log lines yet.',
)}`,
  )
}

export const draftsPage = (v: Visit, notice?: string) =>
  listPage(
    v,
    'Drafts waiting for approval',
    'list_drafts',
    '/console/drafts',
    {
      caption: 'Drafts waiting for approval, newest first',
      heads: ['Created', 'From', 'To', 'Subject', 'Text', 'Decision'],
      row: d => html`<tr id="draft-${d.id}"><td>${when(d.created_at)}</td><td>${d.from}</td><td>${(d.to ?? []).join(', ')}</td><td>${d.subject ?? ''}</td>
<td>${(d.body_text ?? '').slice(0, 200)}</td>
<td>${actionForm(`/console/drafts/${d.id}/approve`, v.viewer.csrf, 'Approve', { name: `Approve “${d.subject ?? d.id}”` })}
${actionForm(`/console/drafts/${d.id}/reject`, v.viewer.csrf, 'Reject', {
  secondary: true,
  name: `Reject “${d.subject ?? d.id}”`,
  fields: html`<label>Reason (optional, shown to the sender) <input type="text" name="reason" maxlength="1000"></label>`,
})}</td></tr>`,
      empty: 'Nothing waits for approval.',
    },
    { args: { status: 'pending_approval' }, before: notice ? html`<p role="status">${notice}</p>` : '', url: '/console/drafts' },
  )

export async function decideDraft(v: Visit, id: string, decision: 'approve' | 'reject') {
  if (decision === 'approve') {
    const sent = await call(v.ctx, v.auth, 'approve_draft', { id }, randomUUIDv7())
    return draftsPage(v, `Approved; the message is ${sent.status ?? 'on its way'}.`)
  }
  // a reason left blank is no reason
  const reason = String(v.form.get('reason') ?? '').trim()
  await call(v.ctx, v.auth, 'reject_draft', { id, ...(reason && { reason }) })
  return draftsPage(v, 'Rejected; nothing was sent.')
}

export const paymentsPage = (v: Visit) =>
  listPage(v, 'Payments (x402 ledger)', 'list_payments', '/console/payments', {
    caption: 'Payments received and sent, newest first',
    heads: ['Created', 'Direction', 'Status', 'Amount', 'Counterparty', 'Settlement'],
    row: p => html`<tr><td>${when(p.created_at)}</td><td>${p.direction}</td><td>${p.status}</td><td>${p.amount} ${p.asset_symbol ?? ''}</td>
<td><code>${p.counterparty}</code></td><td>${p.settle_tx ? html`<code>${p.settle_tx}</code>` : (p.failure_reason ?? '')}</td></tr>`,
    empty: 'No payments yet.',
  })

export const domainsPage = (v: Visit) =>
  listPage(v, 'Domains', 'list_domains', '/console/domains', {
    caption: 'Domains of this organization',
    heads: ['Domain', 'Status', 'Verified', 'Last checked'],
    row: d =>
      html`<tr><td><a href="/console/domains/${d.id}">${d.domain}</a></td><td>${d.status}</td><td>${when(d.verified_at)}</td><td>${when(d.last_checked_at)}</td></tr>`,
    empty: 'No domains yet; mail goes to managed addresses.',
  })

export async function domainPage(v: Visit, id: string) {
  const d = await call(v.ctx, v.auth, 'get_domain', { id })
  return render(
    v,
    d.domain,
    html`<p>Status: <strong>${d.status}</strong>. Verified ${when(d.verified_at)}; last checked ${when(d.last_checked_at)}.</p>
${table(
  'DNS records to publish',
  ['Type', 'Name', 'Value', 'Priority', 'Purpose', 'Status'],
  d.dns_records,
  (r: Row) =>
    html`<tr><td>${r.type}</td><td><code>${r.name}</code></td><td><code>${r.value}</code></td><td>${r.priority ?? ''}</td><td>${r.purpose}</td><td>${r.status}</td></tr>`,
  'No records.',
)}`,
  )
}
